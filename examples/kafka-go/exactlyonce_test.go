package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

const (
	events     = 240
	duplicates = 24 // events the producer sends twice
	partitions = 4
	consumers  = 3
	// crashEvery: about one event in crashEvery crashes at each of the
	// four crash points, so about 4 x 240/30 = 32 crashes a run.
	crashEvery = 30
	// externalKills: besides the chosen crash points, the test kill -9s a
	// consumer at an arbitrary moment this many times, one every
	// externalKillEvery.
	externalKills     = 4
	externalKillEvery = time.Second
	// runLimit turns a run that never finishes into a failure; it judges
	// nothing (the counts below do).
	runLimit = 150 * time.Second
	topic    = "transfers"
	dlqTopic = "transfers.dlq"
	group    = "transfers"
)

// TestExactlyOnceUnderKill9: consumers killed at every crash point, and at
// arbitrary moments, still book every event exactly once; every record
// ends COMPLETED with the ledger's entry id; the group commits every
// offset; and every consumer exits cleanly on SIGTERM.
func TestExactlyOnceUnderKill9(t *testing.T) {
	r := runTransfers(t, true)
	r.report(t)
	if problems := r.check(t); len(problems) > 0 {
		t.Fatalf("%d problems, first: %v", len(problems), problems[:min(len(problems), 10)])
	}
	for _, point := range crashPoints {
		if r.fig.kills[point] == 0 {
			t.Errorf("no crash at %s: the run did not test it", point)
		}
	}
	if r.fig.settleHits == 0 {
		t.Error("settle found no entry: the crashes after the post were not exercised")
	}
}

// TestWithoutSettleDoublePosts: the same run without Settle books the
// events whose consumer was killed after the post twice. It shows that the
// check above can fail.
func TestWithoutSettleDoublePosts(t *testing.T) {
	r := runTransfers(t, false)
	r.report(t)
	doubles := r.doubles()
	if doubles == 0 {
		t.Fatalf("no double post without settle after %d kills after the post: the test could not fail",
			r.fig.kills[pointPosted])
	}
	if problems := r.check(t); len(problems) == 0 {
		t.Fatal("the exactly-once check passed a run with double posts")
	}
}

// transfersRun is one run's world: dedupd, kfake, the ledger, the figures.
type transfersRun struct {
	dedup   *client.Client
	kafka   *kgo.Client
	ledger  *fakeLedger
	ids     []string
	fig     *figures
	took    time.Duration
	records int
}

func runTransfers(t *testing.T, settle bool) *transfersRun {
	ctx, cancel := context.WithTimeout(context.Background(), runLimit+30*time.Second)
	t.Cleanup(cancel)
	brokers := startFakeKafka(t)
	dedupd := dedupdproc.Start(t, dedupdBin, "--data-dir", t.TempDir())
	dc, err := client.New(dedupd.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	kc, err := kgo.NewClient(kgo.SeedBrokers(brokers), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	ledger := newFakeLedger()
	ledgerServer := httptest.NewServer(ledger)
	t.Cleanup(ledgerServer.Close)

	r := &transfersRun{dedup: dc, kafka: kc, ledger: ledger, fig: newFigures()}
	r.records = produce(ctx, t, kc, r)
	args := []string{"-server", dedupd.Addr, "-brokers", brokers, "-ledger", ledgerServer.URL,
		"-topic", topic, "-dead-letter-topic", dlqTopic, "-group", group, "-consumer", "transfers",
		"-lease", "2s", "-session-timeout", "1500ms", "-max-poll", "4"}
	if !settle {
		args = append(args, "-no-settle")
	}
	sup := &supervisor{t: t, args: args, fig: r.fig,
		env: []string{"KAFKA_CRASH_EVERY=" + strconv.Itoa(crashEvery), "KAFKA_CRASH_DIR=" + t.TempDir()}}
	start := time.Now()
	sup.start(consumers)
	stopKilling, killed := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(killed)
		for i := range externalKills {
			select {
			case <-stopKilling:
				return
			case <-time.After(externalKillEvery):
			}
			sup.killOne(i % consumers)
		}
	}()
	err = r.waitDone(ctx, start)
	close(stopKilling)
	<-killed
	sup.stop()
	r.took = time.Since(start)
	if err != nil {
		r.report(t)
		t.Fatalf("%v\nconsumer logs:\n%s", err, r.fig.stderr.String())
	}
	return r
}

// waitDone polls until the group has committed every partition's end
// offset and the ledger has every event.
func (r *transfersRun) waitDone(ctx context.Context, start time.Time) error {
	adm := kadm.NewClient(r.kafka)
	for {
		if time.Since(start) > runLimit {
			return fmt.Errorf("not done after %s: %s", runLimit, r.lag(ctx, adm))
		}
		time.Sleep(200 * time.Millisecond)
		if r.lag(ctx, adm) == "" && len(r.ledger.books()) == events {
			return nil
		}
	}
}

// check compares the ledger's books, dedupd's records and the dead-letter
// topic with what exactly-once means, and returns every difference.
func (r *transfersRun) check(t *testing.T) []string {
	ctx := context.Background()
	books := r.ledger.books()
	var problems []string
	for _, id := range r.ids {
		entries := books[id]
		if len(entries) != 1 {
			problems = append(problems, fmt.Sprintf("%s booked %d times %v", id, len(entries), entries))
		}
		rec, err := r.dedup.Lookup(ctx, "transfers", id)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: lookup: %v", id, err))
		case rec.GetState() != dedupv1.State_STATE_COMPLETED:
			problems = append(problems, fmt.Sprintf("%s: record %s", id, rec.GetState()))
		case len(entries) > 0 && !slices.Contains(entries[:1], string(rec.GetResult())):
			problems = append(problems, fmt.Sprintf("%s: record result %q, ledger's entry %v", id, rec.GetResult(), entries))
		}
	}
	if extra := len(books) - events; extra != 0 {
		problems = append(problems, fmt.Sprintf("%d entries for unknown events", extra))
	}
	for rec, err := range r.dedup.Records(ctx, &dedupv1.ListRecordsRequest{Consumer: "transfers",
		States: []dedupv1.State{dedupv1.State_STATE_PENDING}}) {
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, fmt.Sprintf("%s left PENDING", rec.GetKey()))
	}
	return append(problems, r.checkDeadLetters(ctx, t)...)
}

// doubles counts the events booked more than once.
func (r *transfersRun) doubles() int {
	n := 0
	for _, entries := range r.ledger.books() {
		if len(entries) > 1 {
			n++
		}
	}
	return n
}

func (r *transfersRun) report(t *testing.T) {
	f := r.fig
	f.mu.Lock()
	defer f.mu.Unlock()
	kills := 0
	for _, k := range f.kills {
		kills += k
	}
	t.Logf("events %d (records %d on %d partitions, %d consumers, lease 2s, session timeout 1.5s) in %s: "+
		"kills at chosen points %d %v, kill -9 at arbitrary moments %d, takeovers %d, settle hits %d "+
		"(ledger lookups %d), double posts %d; outcomes %v; exits on SIGTERM: %d clean, %d not",
		events, r.records, partitions, consumers, r.took.Round(time.Millisecond), kills, f.kills, f.externalKills,
		f.takeovers, f.settleHits, r.ledger.lookupCount(), r.doubles(), f.outcomes, f.cleanExits, f.badExits)
}
