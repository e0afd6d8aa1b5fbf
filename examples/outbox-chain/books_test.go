package main

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/client"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// The chain's services and what each one's events are called.
const (
	shipping     = "shipping"
	ledger       = "ledger"
	shippedPrefx = "shipped-"
)

// books is the state of the whole chain after a run: every database's
// rows and dedupd's records.
type books struct {
	orders  []string                    // the producer's orders
	outbox  map[string]map[string]bool  // service → event id → sent
	effects map[string]map[string]int64 // stage → event id → effects applied
	states  map[string]map[string]dedupv1.State
	pending map[string][]string // stage → keys dedupd lists as PENDING
}

// want is the exactly-once oracle, computed from the event count alone:
// order i, its event, its shipped event, one effect of each.
func want(events int) (orders, shipped []string) {
	for i := range events {
		orders = append(orders, OrderID(i))
		shipped = append(shipped, shippedPrefx+OrderID(i))
	}
	return orders, shipped
}

// problems lists every way b differs from exactly-once for events orders.
func (b books) problems(events int) []string {
	orders, shipped := want(events)
	var out []string
	if !slices.Equal(b.orders, orders) {
		out = append(out, fmt.Sprintf("orders: %d placed, want %d", len(b.orders), len(orders)))
	}
	out = append(out, sentOnce("producer outbox", b.outbox["producer"], orders)...)
	out = append(out, sentOnce("shipping outbox", b.outbox[shipping], shipped)...)
	for stage, ids := range map[string][]string{shipping: orders, ledger: shipped} {
		eff := b.effects[stage]
		for _, id := range ids {
			if n := eff[id]; n != 1 {
				out = append(out, fmt.Sprintf("%s: %s has %d effects", stage, id, n))
			}
			if st := b.states[stage][id]; st != dedupv1.State_STATE_COMPLETED {
				out = append(out, fmt.Sprintf("%s: %s is %s in dedupd", stage, id, st))
			}
		}
		if len(eff) != len(ids) {
			out = append(out, fmt.Sprintf("%s: effects for %d events, want %d", stage, len(eff), len(ids)))
		}
		for _, key := range b.pending[stage] {
			out = append(out, fmt.Sprintf("%s: %s left PENDING", stage, key))
		}
	}
	return out
}

func sentOnce(what string, rows map[string]bool, ids []string) []string {
	var out []string
	for _, id := range ids {
		if sent, ok := rows[id]; !ok || !sent {
			out = append(out, fmt.Sprintf("%s: %s present %t, sent %t", what, id, ok, sent))
		}
	}
	if len(rows) != len(ids) {
		out = append(out, fmt.Sprintf("%s: %d rows, want %d", what, len(rows), len(ids)))
	}
	return out
}

// readBooks gathers the books from the three databases and dedupd.
func readBooks(ctx context.Context, t *testing.T, dbs map[string]*pgxpool.Pool, dc *client.Client, events int) books {
	b := books{outbox: map[string]map[string]bool{}, effects: map[string]map[string]int64{},
		states: map[string]map[string]dedupv1.State{}, pending: map[string][]string{}}
	b.orders = queryRows(ctx, t, dbs["producer"], `SELECT id FROM orders ORDER BY id`, func(id string, _ int64) string { return id })
	for _, svc := range []string{"producer", shipping} {
		b.outbox[svc] = map[string]bool{}
		queryRows(ctx, t, dbs[svc], `SELECT event_id, CASE WHEN sent_at IS NULL THEN 0 ELSE 1 END FROM outbox`, func(id string, sent int64) string {
			b.outbox[svc][id] = sent == 1
			return id
		})
	}
	orders, shipped := want(events)
	for stage, ids := range map[string][]string{shipping: orders, ledger: shipped} {
		b.effects[stage] = map[string]int64{}
		queryRows(ctx, t, dbs[stage], `SELECT event_id, applied FROM effects`, func(id string, n int64) string {
			b.effects[stage][id] = n
			return id
		})
		b.states[stage] = map[string]dedupv1.State{}
		for _, id := range ids {
			rec, err := dc.Lookup(ctx, stage, id)
			if err != nil {
				t.Fatalf("lookup %s/%s: %v", stage, id, err)
			}
			b.states[stage][id] = rec.GetState()
		}
		for rec, err := range dc.Records(ctx, &dedupv1.ListRecordsRequest{Consumer: stage,
			States: []dedupv1.State{dedupv1.State_STATE_PENDING}}) {
			if err != nil {
				t.Fatal(err)
			}
			b.pending[stage] = append(b.pending[stage], rec.GetKey())
		}
	}
	return b
}

// queryRows runs a query of (text, optional int8) rows and maps each.
func queryRows(ctx context.Context, t *testing.T, db *pgxpool.Pool, query string, each func(string, int64) string) []string {
	rows, err := db.Query(ctx, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		var n int64
		dest := []any{&id}
		if len(rows.FieldDescriptions()) == 2 {
			dest = append(dest, &n)
		}
		if err := rows.Scan(dest...); err != nil {
			t.Fatal(err)
		}
		out = append(out, each(id, n))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBooksProblems: the oracle finds each way a chain can fail (a lost
// event, a duplicate effect, a row never sent, a claim left PENDING), so
// the chain test's check can fail.
func TestBooksProblems(t *testing.T) {
	const events = 3
	tests := []struct {
		name  string
		spoil func(b *books)
		want  int
	}{
		{"exactly once", func(*books) {}, 0},
		{"a duplicate effect downstream", func(b *books) { b.effects[ledger][shippedPrefx+OrderID(1)] = 2 }, 1},
		{"an order lost before its outbox", func(b *books) { delete(b.outbox["producer"], OrderID(2)) }, 2},
		{"an outbox row never confirmed", func(b *books) { b.outbox[shipping][shippedPrefx+OrderID(0)] = false }, 1},
		{"an event lost on the way to the ledger", func(b *books) {
			delete(b.effects[ledger], shippedPrefx+OrderID(0))
			b.states[ledger][shippedPrefx+OrderID(0)] = dedupv1.State_STATE_UNSPECIFIED
		}, 3},
		{"a claim left pending", func(b *books) {
			b.states[shipping][OrderID(1)] = dedupv1.State_STATE_PENDING
			b.pending[shipping] = []string{OrderID(1)}
		}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := perfectBooks(events)
			tt.spoil(&b)
			if got := b.problems(events); len(got) != tt.want {
				t.Errorf("problems %q, want %d", got, tt.want)
			}
		})
	}
}

func perfectBooks(events int) books {
	orders, shipped := want(events)
	b := books{orders: orders, outbox: map[string]map[string]bool{"producer": {}, shipping: {}},
		effects: map[string]map[string]int64{shipping: {}, ledger: {}},
		states:  map[string]map[string]dedupv1.State{shipping: {}, ledger: {}}, pending: map[string][]string{}}
	for i := range events {
		b.outbox["producer"][orders[i]], b.outbox[shipping][shipped[i]] = true, true
		b.effects[shipping][orders[i]], b.effects[ledger][shipped[i]] = 1, 1
		b.states[shipping][orders[i]] = dedupv1.State_STATE_COMPLETED
		b.states[ledger][shipped[i]] = dedupv1.State_STATE_COMPLETED
	}
	return b
}
