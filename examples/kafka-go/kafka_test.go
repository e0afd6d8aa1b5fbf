package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The test's side of Kafka: kfake's process, the producer, and what the
// group committed and dead-lettered.

// startFakeKafka runs cmd/fakekafka with both topics and returns its
// address.
func startFakeKafka(t *testing.T) string {
	cmd := exec.Command(fakeKafkaBin, "-topics", topic+","+dlqTopic, "-partitions", strconv.Itoa(partitions))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	addrs, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		t.Fatalf("fakekafka said %q: %v", line, err)
	}
	return addrs
}

// produce sends every event once and some twice, shuffled, plus one record
// that is not an event (it must end in the dead-letter topic). The
// duplicates are ones Kafka's idempotent producer does not catch, as when
// the producer retried after a restart. Event ids are the same in every
// run (dedupd, kfake and the ledger are new each time), so the same
// events crash.
func produce(ctx context.Context, t *testing.T, kc *kgo.Client, r *transfersRun) int {
	var recs []*kgo.Record
	for i := range events {
		ev := Event{ID: fmt.Sprintf("evt-%03d", i), Account: fmt.Sprintf("acct-%d", i%17), Amount: int64(100 + i)}
		r.ids = append(r.ids, ev.ID)
		value, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		rec := &kgo.Record{Key: []byte(ev.Account), Value: value}
		recs = append(recs, rec)
		if i%(events/duplicates) == 0 {
			recs = append(recs, &kgo.Record{Key: rec.Key, Value: value})
		}
	}
	recs = append(recs, &kgo.Record{Key: []byte("acct-0"), Value: []byte("not an event")})
	rand.Shuffle(len(recs), func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	if err := kc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	return len(recs)
}

// lag describes the partitions whose committed offset is short of their
// end offset, "" when there is none.
func (r *transfersRun) lag(ctx context.Context, adm *kadm.Client) string {
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return err.Error()
	}
	committed, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		return err.Error()
	}
	var short []string
	ends.Each(func(end kadm.ListedOffset) {
		got, ok := committed.Lookup(end.Topic, end.Partition)
		if !ok || got.At < end.Offset {
			short = append(short, fmt.Sprintf("partition %d at %d of %d", end.Partition, got.At, end.Offset))
		}
	})
	return strings.Join(short, ", ")
}

// checkDeadLetters reads the dead-letter topic: the one malformed record
// must be there (more than once is possible if a consumer died between the
// copy and the commit), and nothing else.
func (r *transfersRun) checkDeadLetters(ctx context.Context, t *testing.T) []string {
	adm := kadm.NewClient(r.kafka)
	ends, err := adm.ListEndOffsets(ctx, dlqTopic)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total == 0 {
		return []string{"the malformed record is not in " + dlqTopic}
	}
	rd, err := kgo.NewClient(kgo.SeedBrokers(r.kafka.OptValue(kgo.SeedBrokers).([]string)...),
		kgo.ConsumeTopics(dlqTopic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var problems []string
	for seen := int64(0); seen < total; {
		fetches := rd.PollFetches(ctx)
		if err := fetches.Err0(); err != nil {
			t.Fatal(err)
		}
		for _, rec := range fetches.Records() {
			seen++
			if string(rec.Value) != "not an event" {
				problems = append(problems, fmt.Sprintf("%s has %q", dlqTopic, rec.Value))
			}
		}
	}
	r.fig.mu.Lock()
	r.fig.outcomes["dead-letter copies"] = int(total)
	r.fig.mu.Unlock()
	return problems
}
