package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/dedupd/dedupd/client"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The replica scenarios' sizes: a few minutes of CI at most.
const (
	replicaCount   = 3
	replicaEvents  = 600 // key events, each delivered replicaCopies times
	replicaCopies  = 2
	replicaWorkers = 24
	replicaLease   = 2 * time.Second // short, so that takeovers after a kill come soon
	replicaLimit   = 3 * time.Minute // a hung run fails instead of hanging CI
)

// TestReplicasUnderKill is issue 29's production run in CI: three dedupd
// processes on one PostgreSQL database, callers spread over them, every
// event delivered more than once to different replicas, a replica killed
// with SIGKILL every few seconds and restarted. Keys go through the Go
// client's Do with Settle, a stream through DoInOrder in park mode; the
// ledgers the test keeps are the oracle. Then, with every replica up, it
// measures what docs/operations.md promises about replicas: how long a
// deleted record and an old policy are still served by another replica,
// and how soon a claim waiting on one replica sees an outcome stored
// through another. The replicas inherit PGOPTIONS, so CI runs it again
// with every connection at SERIALIZABLE, CockroachDB's isolation.
func TestReplicasUnderKill(t *testing.T) {
	c := startReplicas(t, replicaCount)
	figures(t, "isolation %q", os.Getenv("PGOPTIONS"))
	t.Run("keys", func(t *testing.T) { replicaKeys(t, c) })
	t.Run("park-mode stream", func(t *testing.T) { replicaParkedStreams(t, c) })
	t.Run("staleness", func(t *testing.T) { replicaStaleness(t, c) })
}

// replicaKeys: 0 double effects, 0 acknowledged completions lost, nothing
// left PENDING after a reconcile pass.
func replicaKeys(t *testing.T, c *replicaCluster) {
	const consumer = "replica-keys"
	l := &keyLedger{effects: map[string]int{}, acked: map[string][]byte{}}
	keys := make([]string, replicaEvents)
	for i := range keys {
		keys[i] = fmt.Sprintf("event-%04d", i)
	}
	retriesBefore, killsBefore := c.storeRetries(), c.kills
	q := newDeliveryQueue(keys, replicaCopies, replicaCount)
	opt := client.DoOptions{LeaseTTL: replicaLease, Owner: "worker", Settle: func(_ context.Context, a client.Attempt) ([]byte, bool, error) {
		result, found := l.settle(a.Record.GetKey())
		return result, found, nil
	}}
	started := time.Now()
	done := q.work(replicaWorkers, func(d replicaDelivery[string]) error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		res, err := c.clients[d.replica].Do(ctx, consumer, d.event, nil, opt, func(context.Context, client.Attempt) ([]byte, error) {
			return l.apply(d.event), nil
		})
		if err == nil {
			l.ack(d.event, res.Result)
		}
		return err
	})
	c.killWhile(q, done, replicaLimit)
	elapsed := time.Since(started)

	// A reconcile pass settles whatever a kill left PENDING with its lease
	// run out; then nothing may be PENDING at all.
	time.Sleep(replicaLease)
	rec := &client.Reconciler{Client: c.clients[0], Consumer: consumer, Owner: "reconciler", LeaseTTL: replicaLease,
		Settle: opt.Settle}
	report, err := rec.Run(context.Background())
	if err != nil {
		t.Fatalf("reconcile: %v", err)
	}
	pending := 0
	for r, err := range c.clients[1].Records(context.Background(), &dedupv1.ListRecordsRequest{Consumer: consumer,
		States: []dedupv1.State{dedupv1.State_STATE_PENDING}}) {
		if err != nil {
			t.Fatal(err)
		}
		pending++
		t.Errorf("%s still PENDING after the reconcile pass: %+v", r.GetKey(), r)
	}

	double, lost, effects := 0, 0, 0
	for _, key := range keys {
		effects += l.effects[key]
		if l.effects[key] > 1 {
			double++
			t.Errorf("%s: the effect ran %d times", key, l.effects[key])
		}
		acked, ok := l.acked[key]
		if !ok {
			t.Errorf("%s was never acknowledged", key)
			continue
		}
		got, err := c.clients[2].Lookup(context.Background(), consumer, key)
		if err != nil || got.GetState() != dedupv1.State_STATE_COMPLETED || !bytes.Equal(got.GetResult(), acked) {
			lost++
			t.Errorf("%s was acknowledged with %q, but is stored as %v %q (%v)", key, acked, got.GetState(), got.GetResult(), err)
		}
	}
	deliveries := replicaEvents * replicaCopies
	figures(t, "keys: %d events, %d deliveries over %d replicas in %v, %d kills; %d effects, %d double, %d acknowledged completions lost, "+
		"%d nacked deliveries (%d STORE_UNAVAILABLE), reconcile %+v, %d left PENDING; %.0f store retries (%.3f per delivery)",
		replicaEvents, deliveries, replicaCount, elapsed.Round(time.Millisecond), c.kills-killsBefore, effects, double, lost,
		q.failures, q.unavailed, report, pending, c.storeRetries()-retriesBefore, (c.storeRetries()-retriesBefore)/float64(deliveries))
	if effects != replicaEvents {
		t.Errorf("%d effects for %d events", effects, replicaEvents)
	}
}
