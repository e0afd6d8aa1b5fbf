package receipts

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// crash is what a crashing fn panics with: Do neither completes nor
// releases, as when the process dies.
type crash struct{}

func dedup(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(dedupdtest.Start(t, dedupdtest.Embedded))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// doCrashing runs Do; with crashAfter, fn runs the effect and its receipt
// (committed) and then the process "dies" before Complete.
func doCrashing(ctx context.Context, c *client.Client, r *Receipts, key string, effect Effect, crashAfter bool) (res client.DoResult, crashed bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(crash); !ok {
				panic(p)
			}
			crashed = true
		}
	}()
	fn := r.Effect(effect)
	res, err = c.Do(ctx, r.Consumer, key, nil, client.DoOptions{LeaseTTL: 300 * time.Millisecond, Settle: r.Settle, MaxWait: time.Minute},
		func(ctx context.Context, a client.Attempt) ([]byte, error) {
			out, err := fn(ctx, a)
			if crashAfter {
				panic(crash{})
			}
			return out, err
		})
	return res, false, err
}

// TestDoCrashBetweenReceiptAndComplete: the first holder commits its
// effect and receipt, then dies before Complete. The takeover's Settle
// finds the receipt and completes with its result; the effect ran once,
// and later deliveries replay it.
func TestDoCrashBetweenReceiptAndComplete(t *testing.T) {
	c := dedup(t)
	forEach(t, func(t *testing.T, b backend, db DB) {
		ctx := context.Background()
		r := &Receipts{DB: db, Dialect: b.dialect, Consumer: "crash-" + b.name, TTL: time.Hour}
		runs := 0
		effect := func(ctx context.Context, tx Tx) ([]byte, error) {
			runs++
			return effectOf(b.dialect, "E1", int64(runs), "done")(ctx, tx)
		}
		if _, crashed, err := doCrashing(ctx, c, r, "E1", effect, true); !crashed {
			t.Fatalf("first holder did not crash (%v)", err)
		}
		res, crashed, err := doCrashing(ctx, c, r, "E1", effect, false)
		if crashed || err != nil || !res.Settled || string(res.Result) != "done" {
			t.Fatalf("takeover = %+v, crashed %v, %v; want settled from the receipt with %q", res, crashed, err, "done")
		}
		res, _, err = doCrashing(ctx, c, r, "E1", effect, false)
		if err != nil || !res.Replayed || string(res.Result) != "done" {
			t.Fatalf("third delivery = %+v, %v; want a replay", res, err)
		}
		if s := stateOf(t, db, b.dialect, "E1"); runs != 1 || s.effects != 1 || s.receipts != 1 {
			t.Fatalf("effect ran %d times, state %+v; want once", runs, s)
		}
	})
}

// TestDoCrashBeforeReceiptCommit: the first holder's transaction fails
// after its effect (the process dies before COMMIT): nothing committed,
// so the takeover's Settle finds nothing and the effect runs, once.
func TestDoCrashBeforeReceiptCommit(t *testing.T) {
	c := dedup(t)
	forEach(t, func(t *testing.T, b backend, db DB) {
		ctx := context.Background()
		r := &Receipts{DB: db, Dialect: b.dialect, Consumer: "precommit-" + b.name, TTL: time.Hour}
		first := true
		effect := func(ctx context.Context, tx Tx) ([]byte, error) {
			out, err := effectOf(b.dialect, "E1", 1, "done")(ctx, tx)
			if first {
				first = false
				panic(crash{}) // inside the transaction: it never commits
			}
			return out, err
		}
		if _, crashed, _ := doCrashing(ctx, c, r, "E1", effect, false); !crashed {
			t.Fatal("first holder did not crash")
		}
		res, _, err := doCrashing(ctx, c, r, "E1", effect, false)
		if err != nil || res.Settled || res.Replayed || string(res.Result) != "done" {
			t.Fatalf("takeover = %+v, %v; want the effect run now", res, err)
		}
		if s := stateOf(t, db, b.dialect, "E1"); s.effects != 1 || s.receipts != 1 {
			t.Fatalf("state %+v; want one effect and one receipt", s)
		}
	})
}

// TestReconcilerSettlesFromReceipts: a Reconciler given the same Settle
// completes the key whose receipt committed and releases the one whose
// effect never did.
func TestReconcilerSettlesFromReceipts(t *testing.T) {
	c := dedup(t)
	forEach(t, func(t *testing.T, b backend, db DB) {
		ctx := context.Background()
		r := &Receipts{DB: db, Dialect: b.dialect, Consumer: "reconcile-" + b.name, TTL: time.Hour}
		if _, crashed, _ := doCrashing(ctx, c, r, "done", effectOf(b.dialect, "done", 1, "ok"), true); !crashed {
			t.Fatal("no crash")
		}
		if _, crashed, _ := doCrashing(ctx, c, r, "lost", func(context.Context, Tx) ([]byte, error) { panic(crash{}) }, false); !crashed {
			t.Fatal("no crash")
		}
		time.Sleep(400 * time.Millisecond) // both 300ms leases run out
		rec := &client.Reconciler{Client: c, Consumer: r.Consumer, Owner: "test", Settle: r.Settle}
		report, err := rec.Run(ctx)
		if err != nil || report.Completed != 1 || report.Released != 1 {
			t.Fatalf("report %+v (%v); want one completed, one released", report, err)
		}
		got, err := c.Lookup(ctx, r.Consumer, "done")
		if err != nil || string(got.GetResult()) != "ok" {
			t.Fatalf("done = %v (%v); want completed with the receipt's result", got, err)
		}
	})
}

// TestTTLFromPolicy reads the completed retention set on the consumer.
func TestTTLFromPolicy(t *testing.T) {
	c := dedup(t)
	ctx := context.Background()
	want := 36 * time.Hour
	_, err := c.Admin().SetPolicy(ctx, &dedupv1.SetPolicyRequest{Policy: &dedupv1.Policy{Consumer: "p", CompletedTtl: durationpb.New(want)}})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := TTLFromPolicy(ctx, c, "p"); err != nil || got != want {
		t.Fatalf("TTLFromPolicy = %v, %v; want %v", got, err, want)
	}
	if _, err := TTLFromPolicy(ctx, c, ""); err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("an empty consumer gave %v; want the server's refusal", err)
	}
}
