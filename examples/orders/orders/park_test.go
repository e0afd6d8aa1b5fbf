package orders_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	"github.com/dedupd/dedupd/examples/orders/orders"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// crashes injects each crash once per event, from any goroutine.
type crashes struct {
	mu      sync.Mutex
	crashed map[orders.Event]bool
	// released are the events handed back and being applied, by order and
	// sequence, for the crash after their completion.
	released map[string]bool
}

func newCrashes() *crashes {
	return &crashes{crashed: map[orders.Event]bool{}, released: map[string]bool{}}
}

// once crashes the first time it sees ev.
func (c *crashes) once(ev orders.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.crashed[ev] {
		return nil
	}
	c.crashed[ev] = true
	return errCrash
}

func (c *crashes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.crashed)
}

func releasedKey(order string, seq int64) string { return fmt.Sprintf("%s#%d", order, seq) }

// afterCompletion is a client interceptor that crashes once per event
// right after the completion of a parked event that came back: the
// completion is stored, and the next event it hands back is left in
// flight, as when the process dies with the reply in hand.
func (c *crashes) afterCompletion(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
		return err
	}
	r, ok := req.(*dedupv1.CompleteStreamRequest)
	if !ok {
		return nil
	}
	c.mu.Lock()
	isReleased := c.released[releasedKey(r.GetStream(), r.GetSequence())]
	c.mu.Unlock()
	if !isReleased || reply.(*dedupv1.CompleteStreamResponse).GetNext() == nil {
		return nil
	}
	return c.once(orders.Event{Order: r.GetStream(), Seq: r.GetSequence()})
}

// reversed delivers each order's events last first, each repeat right
// after its first delivery: every event but the first of its order is
// parked on every delivery, so what a crash leaves of a parked event that
// came back can only be finished by the pickup worker.
func reversed() []orders.Event {
	var perOrder [][]orders.Event
	for _, order := range slices.Sorted(maps.Keys(lifecycles)) {
		statuses := lifecycles[order]
		var evs []orders.Event
		for i, status := range slices.Backward(statuses) {
			ev := orders.Event{Order: order, Seq: int64(i + 1), Status: status}
			evs = append(evs, ev)
			if i%2 == 0 {
				evs = append(evs, ev) // a redelivery, as in deliveries
			}
		}
		perOrder = append(perOrder, evs)
	}
	var out []orders.Event
	for i := 0; len(out) < 13; i++ { // round-robin over the orders: 13 deliveries in all
		for _, evs := range perOrder {
			if i < len(evs) {
				out = append(out, evs[i])
			}
		}
	}
	return out
}

// In park mode the same shuffled, partly repeated deliveries end every
// order in its right state with every effect applied exactly once, and no
// message is ever delivered again: each is acked as soon as it is parked
// or processed. Crashes are injected after a park (the consumer dies once
// it has acked, and a new one takes its place), when a parked event has
// come back (before its effect), after its effect, and after its
// completion; a Pickup worker finishes what they left, once the lease of
// the dead holder has run out. Each runs on the shuffled deliveries and
// on reversed ones, where only the pickup worker can finish a crashed
// event.
func TestOrdersParkModeNoRedelivery(t *testing.T) {
	addr := dedupdtest.Start(t, dedupdtest.Embedded)
	for _, tc := range []struct {
		crashAt, order string
		events         []orders.Event
	}{
		{"none", "shuffled", deliveries(10)}, {"none", "reversed", reversed()},
		{"after-park", "shuffled", deliveries(10)}, {"after-park", "reversed", reversed()},
		{"before-effect", "shuffled", deliveries(10)}, {"before-effect", "reversed", reversed()},
		{"after-effect", "shuffled", deliveries(10)}, {"after-effect", "reversed", reversed()},
		{"after-completion", "shuffled", deliveries(10)}, {"after-completion", "reversed", reversed()},
	} {
		crashAt := tc.crashAt
		t.Run(crashAt+"/"+tc.order, func(t *testing.T) {
			crash := newCrashes()
			table := orders.NewTable()
			consumerName := "orders-park-" + crashAt + "-" + tc.order
			newConsumer := func() *orders.ParkConsumer {
				dedup, err := client.New(addr, client.WithDialOptions(grpc.WithUnaryInterceptor(func(ctx context.Context, method string,
					req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					if crashAt == "after-completion" {
						return crash.afterCompletion(ctx, method, req, reply, cc, invoker, opts...)
					}
					return invoker(ctx, method, req, reply, cc, opts...)
				})))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { dedup.Close() })
				c := &orders.ParkConsumer{Dedup: dedup, Table: table, Consumer: consumerName, Lease: 100 * time.Millisecond}
				c.Hooks.BeforeEffect = func(ev orders.Event) error {
					crash.mu.Lock()
					crash.released[releasedKey(ev.Order, ev.Seq)] = true
					crash.mu.Unlock()
					if crashAt == "before-effect" {
						return crash.once(ev)
					}
					return nil
				}
				if crashAt == "after-effect" {
					c.Hooks.AfterEffect = crash.once
				}
				return c
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			pickupCtx, stopPickup := context.WithCancel(ctx)
			pickedUp := make(chan int)
			go func() { pickedUp <- newConsumer().Pickup(pickupCtx, 10*time.Millisecond) }()
			consumer := newConsumer()
			redelivered, err := orders.Redeliver(ctx, tc.events, 5*time.Millisecond, func(ev orders.Event) (orders.Outcome, error) {
				out, err := consumer.HandleParked(ctx, ev)
				if crashAt == "after-park" && err == nil && out == orders.Parked && crash.once(ev) != nil {
					consumer = newConsumer() // acked, then the process died: a new one takes over
				}
				return out, err
			})
			if err != nil {
				t.Fatal(err)
			}
			waitFinal(ctx, t, table)
			stopPickup()
			picked := <-pickedUp
			if redelivered != 0 {
				t.Errorf("%d redeliveries, want none in park mode", redelivered)
			}
			checkEffects(t, table)
			pickupNeeded := tc.order == "reversed" && crashAt != "none" && crashAt != "after-park"
			switch {
			case crashAt != "none" && crash.count() == 0:
				t.Fatal("no crash was injected")
			case pickupNeeded && picked == 0:
				t.Fatalf("%d crashes, and the pickup worker finished nothing", crash.count())
			}
			t.Logf("%d crashes injected, %d events finished by the pickup worker, %d redeliveries", crash.count(), picked, redelivered)
		})
	}
}

// waitFinal waits until every order has reached its final status.
func waitFinal(ctx context.Context, t *testing.T, table *orders.Table) {
	t.Helper()
	for {
		done := true
		for order, statuses := range lifecycles {
			if table.Status(order) != statuses[len(statuses)-1] {
				done = false
			}
		}
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the orders never reached their final status")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// checkEffects checks that every event's effect was applied exactly once.
func checkEffects(t *testing.T, table *orders.Table) {
	t.Helper()
	for order, statuses := range lifecycles {
		for i, s := range statuses {
			ev := orders.Event{Order: order, Seq: int64(i + 1), Status: s}
			if n := table.EffectsOf(ev); n != 1 {
				t.Errorf("%s #%d (%s) applied %d times, want once", order, ev.Seq, s, n)
			}
		}
	}
}
