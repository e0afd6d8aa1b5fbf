// Package orders is the library half of the order-events example: a
// consumer that applies created, paid and cancelled events of each order in
// sequence, once each, with a dedupd stream per order.
//
// Events of one order carry sequence numbers (created 1, paid 2, cancelled
// 3). The transport may deliver them twice or out of order; dedupd's stream
// says, in one step, whether an event is a duplicate (skip it), the next
// one (process it), or early (put it back). The consumer's own table keeps,
// with each order's status, the last sequence applied and the highest
// fencing token that wrote it, in the same atomic write as the effect: a
// retry after a crash between the effect and CompleteStream finds the
// event applied instead of applying it twice, and a holder whose lease ran
// out is refused.
//
// In park mode (park.go) dedupd also holds the early events, so that no
// message is ever put back.
package orders

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dedupd/dedupd/client"
)

// Event is one order event.
type Event struct {
	Order string
	Seq   int64
	// Status is what the event makes of the order: created, paid, or
	// cancelled.
	Status string
}

// Table is the consumer's own state, standing in for its database: one row
// per order. Apply is its one atomic write.
type Table struct {
	mu   sync.Mutex
	rows map[string]*Row
	// Effects counts each (order, sequence) effect applied, for the test.
	Effects map[Event]int
}

// Row is one order's state.
type Row struct {
	Status  string
	LastSeq int64
	Fence   int64
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{rows: map[string]*Row{}, Effects: map[Event]int{}} }

// ErrFenced is a write by a holder whose lease ran out and was taken over.
var ErrFenced = errors.New("orders: a newer holder has taken this order over")

// Apply sets the order's status for event ev under fencing token token,
// atomically: an event already applied is a no-op, and a token older than
// the row's is refused.
func (t *Table) Apply(ev Event, token int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.rows[ev.Order]
	if r == nil {
		r = &Row{}
		t.rows[ev.Order] = r
	}
	switch {
	case token < r.Fence:
		return ErrFenced
	case ev.Seq <= r.LastSeq:
		r.Fence = token // applied by an earlier holder; raise the fence
		return nil
	}
	r.Status, r.LastSeq, r.Fence = ev.Status, ev.Seq, token
	t.Effects[ev]++
	return nil
}

// EffectsOf returns how many times ev's effect was applied.
func (t *Table) EffectsOf(ev Event) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.Effects[ev]
}

// Status returns an order's status, "" when it has none.
func (t *Table) Status(order string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.rows[order]; r != nil {
		return r.Status
	}
	return ""
}

// Hooks let a test crash the consumer between the steps; a hook that
// returns an error makes Handle stop there, as a crash would, leaving the
// claim to run out.
type Hooks struct {
	AfterClaim, AfterEffect func(Event) error
}

// Consumer handles order events.
type Consumer struct {
	Dedup    *client.Client
	Table    *Table
	Consumer string // the dedupd consumer name
	Lease    time.Duration
	Hooks    Hooks
}

// Outcome is what Handle did with an event.
type Outcome int

const (
	// Applied: the event is processed (now, or by an earlier attempt).
	Applied Outcome = iota
	// Duplicate: processed before; skipped.
	Duplicate
	// Later: not processable yet (an earlier event is missing, or another
	// holder has the order); the transport should deliver it again.
	Later
	// Parked: in park mode (park.go), the event came before its turn and
	// dedupd holds it; the message is done.
	Parked
)

// Handle processes one delivery of ev.
func (c *Consumer) Handle(ctx context.Context, ev Event) (Outcome, error) {
	claim, err := c.Dedup.ClaimStream(ctx, c.Consumer, ev.Order, ev.Seq, client.StreamClaimOptions{LeaseTTL: c.Lease})
	switch {
	case errors.Is(err, client.ErrSequenceGap):
		return Later, nil
	case err != nil:
		return Later, err
	case claim.Outcome == client.StreamDuplicate:
		return Duplicate, nil
	case claim.Outcome == client.StreamInProgress:
		return Later, nil
	}
	if err := hook(c.Hooks.AfterClaim, ev); err != nil {
		return Later, err
	}
	if err := c.Table.Apply(ev, claim.FencingToken); err != nil {
		return Later, err
	}
	if err := hook(c.Hooks.AfterEffect, ev); err != nil {
		return Later, err
	}
	if _, err := c.Dedup.CompleteStream(ctx, c.Consumer, ev.Order, ev.Seq, claim.FencingToken); err != nil {
		return Later, fmt.Errorf("completing %s #%d: %w", ev.Order, ev.Seq, err)
	}
	return Applied, nil
}

func hook(h func(Event) error, ev Event) error {
	if h == nil {
		return nil
	}
	return h(ev)
}

// Redeliver runs a small redelivering transport: it hands the events to
// handle in order, and puts every event that is not done (Later, or an
// error such as a crash) back at the end of the queue, after a pause, until
// the queue is empty. It returns how many deliveries were redeliveries.
func Redeliver(ctx context.Context, events []Event, pause time.Duration, handle func(Event) (Outcome, error)) (int, error) {
	queue := append([]Event(nil), events...)
	redelivered := 0
	for len(queue) > 0 {
		ev := queue[0]
		queue = queue[1:]
		out, err := handle(ev)
		if err == nil && out != Later {
			continue
		}
		queue = append(queue, ev)
		redelivered++
		select {
		case <-ctx.Done():
			return redelivered, ctx.Err()
		case <-time.After(pause):
		}
	}
	return redelivered, nil
}
