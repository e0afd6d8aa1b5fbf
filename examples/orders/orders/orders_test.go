package orders_test

import (
	"context"
	"errors"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	"github.com/dedupd/dedupd/examples/orders/orders"
)

func TestMain(m *testing.M) { dedupdtest.Main(m) }

var errCrash = errors.New("crash (injected)")

// lifecycles are the orders and their events in sequence: the final status
// of each is its last event's.
var lifecycles = map[string][]string{
	"order-1": {"created", "paid", "cancelled"},
	"order-2": {"created", "paid"},
	"order-3": {"created"},
	"order-4": {"created", "cancelled"},
}

// deliveries are every event, some twice, shuffled by seed (the same
// order for the same seed).
func deliveries(seed uint64) []orders.Event {
	var evs []orders.Event
	for _, order := range slices.Sorted(maps.Keys(lifecycles)) {
		statuses := lifecycles[order]
		for i, s := range statuses {
			ev := orders.Event{Order: order, Seq: int64(i + 1), Status: s}
			evs = append(evs, ev)
			if i%2 == 0 {
				evs = append(evs, ev) // a redelivery
			}
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	r.Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	return evs
}

// Every order ends in its right final state and every event's effect is
// applied exactly once, whatever the order of delivery, with crashes
// injected after the claim, after the effect, and after the completion
// (where the transport, not having seen an ack, delivers again).
func TestOrdersEndRightWithCrashes(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	for _, crashAt := range []string{"none", "after-claim", "after-effect", "after-complete"} {
		t.Run(crashAt, func(t *testing.T) {
			dedup, err := client.New(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer dedup.Close()
			table := orders.NewTable()
			c := &orders.Consumer{Dedup: dedup, Table: table, Consumer: "orders-" + crashAt, Lease: 100 * time.Millisecond}
			crashed := map[orders.Event]bool{}
			crashOnce := func(ev orders.Event) error {
				if ev.Seq%2 == 1 && !crashed[ev] { // the first try of every odd event
					crashed[ev] = true
					return errCrash
				}
				return nil
			}
			switch crashAt {
			case "after-claim":
				c.Hooks.AfterClaim = crashOnce
			case "after-effect":
				c.Hooks.AfterEffect = crashOnce
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = orders.Redeliver(ctx, deliveries(7), 5*time.Millisecond, func(ev orders.Event) (orders.Outcome, error) {
				out, err := c.Handle(ctx, ev)
				if crashAt == "after-complete" && err == nil && out == orders.Applied && crashOnce(ev) != nil {
					return orders.Later, errCrash // the ack was lost: delivered again
				}
				return out, err
			})
			if err != nil {
				t.Fatal(err)
			}
			for order, statuses := range lifecycles {
				if got, want := table.Status(order), statuses[len(statuses)-1]; got != want {
					t.Errorf("%s ends %q, want %q", order, got, want)
				}
				for i, s := range statuses {
					ev := orders.Event{Order: order, Seq: int64(i + 1), Status: s}
					if n := table.Effects[ev]; n != 1 {
						t.Errorf("%s #%d (%s) applied %d times, want once", order, ev.Seq, s, n)
					}
				}
			}
			if crashAt != "none" && len(crashed) == 0 {
				t.Fatal("no crash was injected")
			}
			t.Logf("%d crashes injected", len(crashed))
		})
	}
}

// A holder whose lease ran out and was taken over cannot write.
func TestStaleHolderIsFenced(t *testing.T) {
	table := orders.NewTable()
	ev := orders.Event{Order: "o", Seq: 1, Status: "created"}
	if err := table.Apply(ev, 2); err != nil {
		t.Fatal(err)
	}
	if err := table.Apply(orders.Event{Order: "o", Seq: 2, Status: "paid"}, 1); !errors.Is(err, orders.ErrFenced) {
		t.Fatalf("stale write: %v", err)
	}
	if err := table.Apply(ev, 3); err != nil || table.Effects[ev] != 1 {
		t.Fatalf("re-applying an applied event: %v, %d effects", err, table.Effects[ev])
	}
}
