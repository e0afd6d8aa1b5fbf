package stock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	"github.com/dedupd/dedupd/examples/inventory/stock"
	"github.com/dedupd/dedupd/internal/testing/pgtest"
)

func TestMain(m *testing.M) { dedupdtest.Main(m) }

var e42 = stock.Event{ID: "E42", Item: "widget", Qty: 3}

// crash is what a crash hook panics with.
type crash struct{}

// setup gives a consumer with 100 widgets in a fresh schema, talking to a
// fresh dedupd, with short leases so that crashed claims run out quickly.
func setup(t *testing.T) (*stock.Consumer, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	db, err := pgxpool.New(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := stock.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO stock VALUES ('widget', 100)`); err != nil {
		t.Fatal(err)
	}
	dedup, err := client.New(dedupdtest.Start(t, dedupdtest.Backends[0]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dedup.Close() })
	return &stock.Consumer{DB: db, Dedup: dedup, Name: "inventory", LeaseTTL: 300 * time.Millisecond}, ctx
}

// deliver hands e to the consumer, reporting a crash instead of panicking.
func deliver(c *stock.Consumer, ctx context.Context, e stock.Event) (left int, replayed, crashed bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
			crashed = true
		}
	}()
	left, replayed, err = c.Handle(ctx, e)
	return left, replayed, false, err
}

// assertOneEffect checks stock 97 and exactly one applied event.
func assertOneEffect(t *testing.T, c *stock.Consumer, ctx context.Context) {
	t.Helper()
	var qty, applied int
	if err := c.DB.QueryRow(ctx, `SELECT qty FROM stock WHERE item = 'widget'`).Scan(&qty); err != nil {
		t.Fatal(err)
	}
	if err := c.DB.QueryRow(ctx, `SELECT count(*) FROM dedupd_receipts`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if qty != 97 || applied != 1 {
		t.Fatalf("stock %d with %d applied events; want 97 and exactly one", qty, applied)
	}
}

func crashOnce() func(stock.Event) {
	crashed := false
	return func(stock.Event) {
		if !crashed {
			crashed = true
			panic(crash{})
		}
	}
}

// TestCrashWindows crashes the consumer at each point of the two-phase
// pattern, then redelivers E42 until it goes through, and once more.
func TestCrashWindows(t *testing.T) {
	tests := []struct {
		name  string
		hooks func() stock.Hooks
	}{
		{"after claim", func() stock.Hooks { return stock.Hooks{AfterClaim: crashOnce()} }},
		{"after effect", func() stock.Hooks { return stock.Hooks{AfterEffect: crashOnce()} }},
		{"after outcome recorded", func() stock.Hooks { return stock.Hooks{AfterOutcome: crashOnce()} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ctx := setup(t)
			c.Hooks = tt.hooks()
			if _, _, crashed, err := deliver(c, ctx, e42); !crashed {
				t.Fatalf("first delivery did not crash (err %v)", err)
			}
			// The redelivery waits out the crashed claim's lease (or finds
			// the recorded outcome) and must not take stock again.
			left, _, crashed, err := deliver(c, ctx, e42)
			if crashed || err != nil || left != 97 {
				t.Fatalf("redelivery = %d left, crashed %v, %v; want 97", left, crashed, err)
			}
			left, replayed, _, err := deliver(c, ctx, e42)
			if err != nil || !replayed || left != 97 {
				t.Fatalf("third delivery = %d left, replayed %v, %v; want a replay of 97", left, replayed, err)
			}
			assertOneEffect(t, c, ctx)
		})
	}
}

// TestStaleHolderIsFenced: a holder whose lease ran out and was taken over
// cannot apply the event with its old token.
func TestStaleHolderIsFenced(t *testing.T) {
	c, ctx := setup(t)
	if _, _, _, err := deliver(c, ctx, e42); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, stock.Event{ID: "E42", Item: "widget", Qty: 3}, 1); !errors.Is(err, stock.ErrFenced) {
		t.Fatalf("Apply with a stale token = %v, want ErrFenced", err)
	}
	assertOneEffect(t, c, ctx)
}

func TestConflictAndRejection(t *testing.T) {
	c, ctx := setup(t)
	if _, _, _, err := deliver(c, ctx, e42); err != nil {
		t.Fatal(err)
	}
	_, _, _, err := deliver(c, ctx, stock.Event{ID: "E42", Item: "widget", Qty: 5})
	var dedupErr *client.Error
	if !errors.Is(err, client.ErrDigestMismatch) || !errors.As(err, &dedupErr) || dedupErr.Record.GetKey() != "E42" {
		t.Fatalf("E42 with other content = %v; want a digest mismatch carrying the stored record", err)
	}

	tooMany := stock.Event{ID: "E43", Item: "widget", Qty: 1000}
	for i, wantReplay := range []bool{false, true} {
		_, _, _, err := deliver(c, ctx, tooMany)
		var rejected *client.RejectedError
		if !errors.As(err, &rejected) || rejected.Replayed != wantReplay || rejected.Rejection.Reason != "OUT_OF_STOCK" {
			t.Fatalf("delivery %d of E43 = %v; want an OUT_OF_STOCK rejection (replayed %v)", i+1, err, wantReplay)
		}
	}
	assertOneEffect(t, c, ctx)
}

// TestReconcile settles a claim abandoned after its effect (completed from
// the consumer's own table) and one abandoned before it (released, so the
// redelivery takes the stock).
func TestReconcile(t *testing.T) {
	c, ctx := setup(t)
	c.Hooks = stock.Hooks{AfterEffect: crashOnce()}
	_, _, _, _ = deliver(c, ctx, e42) // crashes after the effect, on purpose
	e44 := stock.Event{ID: "E44", Item: "widget", Qty: 10}
	c.Hooks = stock.Hooks{AfterClaim: crashOnce()}
	_, _, _, _ = deliver(c, ctx, e44) // crashes after the claim, on purpose
	c.Hooks = stock.Hooks{}

	// Wait for both abandoned leases to run out.
	for _, id := range []string{"E42", "E44"} {
		for {
			rec, err := c.Dedup.Lookup(ctx, "inventory", id)
			if err != nil {
				t.Fatal(err)
			}
			if time.Now().After(rec.GetLeaseExpiresAt().AsTime().Add(50 * time.Millisecond)) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	report, err := c.Reconciler().Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if report.Completed != 1 || report.Released != 1 {
		t.Fatalf("report %+v; want E42 completed and E44 released", report)
	}
	left, replayed, _, err := deliver(c, ctx, e42)
	if err != nil || !replayed || left != 97 {
		t.Fatalf("E42 after reconciliation = %d, replayed %v, %v; want the replay of 97", left, replayed, err)
	}
	assertOneEffect(t, c, ctx)
	left, replayed, _, err = deliver(c, ctx, e44)
	if err != nil || replayed || left != 87 {
		t.Fatalf("E44 after release = %d, replayed %v, %v; want it applied now, 87 left", left, replayed, err)
	}
}
