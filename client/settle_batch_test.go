package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestDoBatchSettle: each acquired item of a takeover is settled before
// fn, and recorded by Settle's answer; a failed Settle leaves its claim
// PENDING while the rest of the batch is recorded.
func TestDoBatchSettle(t *testing.T) {
	dedupdtest.ForEach(t, nil, func(t *testing.T, addr string) {
		c, ctx := newClient(t, addr), testContext(t)
		for _, key := range []string{"found", "missing", "broken", "failing"} {
			crashedClaim(t, ctx, c, key)
		}
		settle := func(_ context.Context, a client.Attempt) ([]byte, bool, error) {
			if a.Number == 1 {
				t.Errorf("settle ran for %s on attempt 1", a.Record.GetKey())
			}
			switch a.Record.GetKey() {
			case "found":
				return []byte("charge-3"), true, nil
			case "broken":
				return nil, false, client.Terminal("BAD_EVENT", errors.New("no such account"), nil)
			case "failing":
				return nil, false, errGatewayDown
			}
			return nil, false, nil
		}
		ran := map[string]bool{}
		items := []client.BatchItem{{Key: "found"}, {Key: "missing"}, {Key: "broken"}, {Key: "failing"}, {Key: "fresh"}}
		outcomes, err := c.DoBatch(ctx, "pay", items, client.DoBatchOptions{LeaseTTL: time.Hour, Parallelism: 1, Settle: settle},
			func(_ context.Context, key string, _ client.Attempt) ([]byte, error) {
				ran[key] = true
				return []byte("fn ran"), nil
			})
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			ran     bool
			state   dedupv1.State
			result  string
			settled bool
			err     error
		}{
			{false, dedupv1.State_STATE_COMPLETED, "charge-3", true, nil},
			{true, dedupv1.State_STATE_COMPLETED, "fn ran", false, nil},
			{false, dedupv1.State_STATE_REJECTED, "", false, client.ErrRejected},
			{false, dedupv1.State_STATE_PENDING, "", false, client.ErrSettleFailed},
			{true, dedupv1.State_STATE_COMPLETED, "fn ran", false, nil},
		}
		for i, w := range want {
			key, o := items[i].Key, outcomes[i]
			if ran[key] != w.ran || o.Settled != w.settled || string(o.Result) != w.result ||
				(w.err == nil) != (o.Err == nil) || (w.err != nil && !errors.Is(o.Err, w.err)) {
				t.Errorf("%s: ran %v, outcome %+v; want ran %v, %+v", key, ran[key], o, w.ran, w)
			}
			if rec, err := c.Lookup(ctx, "pay", key); err != nil || rec.GetState() != w.state || string(rec.GetResult()) != w.result {
				t.Errorf("%s: record %v, %v; want %s %q", key, rec, err, w.state, w.result)
			}
		}
	})
}

// TestDoInOrderSettle: DoInOrder runs Settle on every acquisition (a stream
// keeps no attempt count); found completes the event without fn, a failure
// leaves the claim pending, and a timeout in fn is an unknown outcome.
func TestDoInOrderSettle(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	c, ctx := newClient(t, addr), testContext(t)
	runs := 0
	fn := func(context.Context, int64) error { runs++; return nil }
	found := func(found bool, err error) client.InOrderOptions {
		return client.InOrderOptions{LeaseTTL: time.Hour, MaxWait: -1,
			Settle: func(context.Context, int64) (bool, error) { return found, err }}
	}

	res, err := c.DoInOrder(ctx, "orders", "s", 1, found(true, nil), fn)
	if err != nil || runs != 0 || res.Stream.GetHighWater() != 1 {
		t.Fatalf("settle found: %+v, %v, %d runs; want seq 1 completed without fn", res, err, runs)
	}
	res, err = c.DoInOrder(ctx, "orders", "s", 2, found(false, nil), fn)
	if err != nil || runs != 1 || res.Stream.GetHighWater() != 2 {
		t.Fatalf("settle not found: %+v, %v, %d runs; want fn to complete seq 2", res, err, runs)
	}
	_, err = c.DoInOrder(ctx, "orders", "s", 3, found(false, errGatewayDown), fn)
	if !errors.Is(err, client.ErrSettleFailed) || !errors.Is(err, errGatewayDown) || runs != 1 {
		t.Fatalf("settle failed: %v, %d runs; want ErrSettleFailed without fn", err, runs)
	}
	if st, err := c.GetStream(ctx, "orders", "s"); err != nil || st.GetInFlight() != 3 || st.GetHighWater() != 2 {
		t.Fatalf("after a failed settle: %v, %v; want seq 3 still in flight", st, err)
	}
	_, err = c.DoInOrder(ctx, "orders", "t", 1, client.InOrderOptions{LeaseTTL: time.Hour},
		func(context.Context, int64) error { return context.DeadlineExceeded })
	if st, gerr := c.GetStream(ctx, "orders", "t"); !errors.Is(err, client.ErrOutcomeUnknown) || gerr != nil || st.GetInFlight() != 1 {
		t.Fatalf("fn timed out: %v; stream %v, %v; want seq 1 still in flight", err, st, gerr)
	}
}
