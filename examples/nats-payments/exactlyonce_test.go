package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

const (
	events     = 300
	duplicates = 30 // events the producer publishes twice
	consumers  = 3
	// crashEvery: about one event in crashEvery crashes at each crash
	// point, so about 4 x 300/25 = 48 crashes a run.
	crashEvery = 25
	// externalKills: besides the chosen crash points, the test kill -9s a
	// consumer at an arbitrary moment this many times, one every
	// externalKillEvery.
	externalKills     = 8
	externalKillEvery = 700 * time.Millisecond
	// runLimit turns a run that never settles into a failure; it judges
	// nothing (the answers below do).
	runLimit = 100 * time.Second
)

// TestExactlyOnceUnderKill9: consumers killed at every crash point, and
// connections dropped without acks, still charge every event exactly once,
// and every record ends COMPLETED with the charge id.
func TestExactlyOnceUnderKill9(t *testing.T) {
	r := runPayments(t, true)
	r.report(t)
	if problems := r.check(t); len(problems) > 0 {
		t.Fatalf("%d problems, first: %v", len(problems), problems[:min(len(problems), 10)])
	}
	for _, point := range []string{pointClaimed, pointCharged, pointComplete, pointDrop} {
		if r.fig.kills[point] == 0 {
			t.Errorf("no crash at %s: the run did not test it", point)
		}
	}
	if r.fig.settleHits == 0 {
		t.Error("settle found no charge: the crashes after the charge were not exercised")
	}
}

// TestWithoutSettleDoubleCharges: the same run without Settle charges the
// events whose consumer was killed after the charge twice. It shows that
// the check above can fail.
func TestWithoutSettleDoubleCharges(t *testing.T) {
	r := runPayments(t, false)
	r.report(t)
	doubles := r.doubles()
	if doubles == 0 {
		t.Fatalf("no double charge without settle after %d kills after the charge: the test could not fail",
			r.fig.kills[pointCharged])
	}
	if problems := r.check(t); len(problems) == 0 {
		t.Fatal("the exactly-once check passed a run with double charges")
	}
}

// run is one run's world: dedupd, the gateway, the stream and the figures.
type paymentsRun struct {
	dedup *client.Client
	gw    *fakeGateway
	ids   []string
	fig   *figures
	took  time.Duration
	msgs  int
}

func runPayments(t *testing.T, settle bool) *paymentsRun {
	natsURL := os.Getenv("NATS_URL")
	if natsURL == "" {
		natsURL = nats.DefaultURL
	}
	nc, err := nats.Connect(natsURL, nats.Timeout(5*time.Second))
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("NATS at %s: %v (CI needs it)", natsURL, err)
		}
		t.Skipf("NATS at %s: %v", natsURL, err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithTimeout(context.Background(), runLimit+30*time.Second)
	t.Cleanup(cancel)

	dedupd := dedupdproc.Start(t, dedupdBin, "--data-dir", t.TempDir())
	dc, err := client.New(dedupd.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dc.Close() })
	gw := newFakeGateway()
	gwServer := httptest.NewServer(gw)
	t.Cleanup(gwServer.Close)

	// A fresh stream and subject per run; the consumers create the
	// durable consumer with the AckWait under test.
	runID := strconv.FormatInt(time.Now().UnixNano(), 36)
	streamName, subject := "PAY_"+runID, "pay."+runID
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: streamName, Subjects: []string{subject}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), streamName) })
	r := &paymentsRun{dedup: dc, gw: gw, fig: &figures{kills: map[string]int{}}}
	r.msgs = publish(ctx, t, js, subject, r)

	args := []string{"-server", dedupd.Addr, "-nats", natsURL, "-gateway", gwServer.URL,
		"-stream", streamName, "-subject", subject, "-durable", "payments", "-consumer", "payments",
		"-lease", "2s", "-ack-wait", "3s"}
	if !settle {
		args = append(args, "-no-settle")
	}
	sup := &supervisor{args: args, env: []string{"PAYMENTS_CRASH_EVERY=" + strconv.Itoa(crashEvery)}, fig: r.fig}
	start := time.Now()
	sup.start(t, consumers)
	stopKilling := make(chan struct{})
	killed := make(chan struct{})
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
	err = r.waitDone(ctx, js, streamName, start)
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

// publish sends every event once and some twice, shuffled, with no
// Nats-Msg-Id: these are duplicates the broker does not catch, as when the
// producer retried after its window. Event ids are the same in every run
// (dedupd and the gateway are new each time), so the same events crash.
func publish(ctx context.Context, t *testing.T, js jetstream.JetStream, subject string, r *paymentsRun) int {
	var bodies [][]byte
	for i := range events {
		ev := Event{ID: fmt.Sprintf("evt-%03d", i), Account: fmt.Sprintf("acct-%d", i%17), Amount: int64(100 + i)}
		r.ids = append(r.ids, ev.ID)
		body, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
		if i%(events/duplicates) == 0 {
			bodies = append(bodies, body)
		}
	}
	rand.Shuffle(len(bodies), func(i, j int) { bodies[i], bodies[j] = bodies[j], bodies[i] })
	for _, b := range bodies {
		if _, err := js.Publish(ctx, subject, b); err != nil {
			t.Fatal(err)
		}
	}
	return len(bodies)
}

// waitDone polls until every message is acked and every event charged.
func (r *paymentsRun) waitDone(ctx context.Context, js jetstream.JetStream, stream string, start time.Time) error {
	for {
		if time.Since(start) > runLimit {
			return fmt.Errorf("not settled after %s", runLimit)
		}
		time.Sleep(200 * time.Millisecond)
		cons, err := js.Consumer(ctx, stream, "payments")
		if err != nil {
			continue // not created by a consumer yet
		}
		info, err := cons.Info(ctx)
		if err != nil || info.NumPending > 0 || info.NumAckPending > 0 {
			continue
		}
		if len(r.gw.books()) == events {
			return nil
		}
	}
}

// check compares the gateway's books and dedupd's records with what
// exactly-once means, and returns every difference.
func (r *paymentsRun) check(t *testing.T) []string {
	ctx := context.Background()
	books := r.gw.books()
	var problems []string
	for _, id := range r.ids {
		charges := books[id]
		if len(charges) != 1 {
			problems = append(problems, fmt.Sprintf("%s charged %d times %v", id, len(charges), charges))
		}
		rec, err := r.dedup.Lookup(ctx, "payments", id)
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("%s: lookup: %v", id, err))
		case rec.GetState() != dedupv1.State_STATE_COMPLETED:
			problems = append(problems, fmt.Sprintf("%s: record %s", id, rec.GetState()))
		case len(charges) > 0 && !slices.Contains(charges[:1], string(rec.GetResult())):
			problems = append(problems, fmt.Sprintf("%s: record result %q, gateway's charge %v", id, rec.GetResult(), charges))
		}
	}
	if extra := len(books) - events; extra != 0 {
		problems = append(problems, fmt.Sprintf("%d charges for unknown events", extra))
	}
	for rec, err := range r.dedup.Records(ctx, &dedupv1.ListRecordsRequest{Consumer: "payments",
		States: []dedupv1.State{dedupv1.State_STATE_PENDING}}) {
		if err != nil {
			t.Fatal(err)
		}
		problems = append(problems, fmt.Sprintf("%s left PENDING", rec.GetKey()))
	}
	return problems
}

// doubles counts the events charged more than once.
func (r *paymentsRun) doubles() int {
	n := 0
	for _, charges := range r.gw.books() {
		if len(charges) > 1 {
			n++
		}
	}
	return n
}

func (r *paymentsRun) report(t *testing.T) {
	f := r.fig
	f.mu.Lock()
	defer f.mu.Unlock()
	kills := 0
	for _, k := range f.kills {
		kills += k
	}
	t.Logf("events %d (messages %d, %d consumers, AckWait 3s, lease 2s) in %s: kills at chosen points %d %v "+
		"(of them drops without ack %d), kill -9 at arbitrary moments %d, "+
		"takeovers %d, settle hits %d (gateway lookups %d), double charges %d; outcomes: %d completed, %d replayed, %d errors",
		events, r.msgs, consumers, r.took.Round(time.Millisecond), kills, f.kills, f.drops, f.externalKills,
		f.takeovers, f.settleHits, r.gw.lookupCount(), r.doubles(), f.completed, f.replayed, f.errors)
}
