package orders

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dedupd/dedupd/client"
)

// Park mode: dedupd is the resequencer. An event that arrives before its
// turn is parked in dedupd with its payload and its message acked at once;
// when the event before it completes, dedupd hands it back, in order, and
// the consumer applies it then. No message is ever put back, and the
// consumer holds nothing in memory: a crash loses no event, because a
// parked event that was handed back to a consumer that died waits in
// dedupd until its lease runs out, and a Pickup worker then finishes it.

// ParkHooks let a test crash the consumer while it applies a parked event
// handed back: a hook that returns an error stops there, as a crash would,
// leaving the event in flight until its lease runs out (Pickup then takes
// it). A crash while the delivered event itself is in hand is what Hooks
// covers, and costs a redelivery.
type ParkHooks struct {
	// BeforeEffect runs when a parked event has come back, before its
	// effect; AfterEffect after its effect, before its completion.
	BeforeEffect, AfterEffect func(Event) error
}

// ParkConsumer handles order events in park mode.
type ParkConsumer struct {
	Dedup    *client.Client
	Table    *Table
	Consumer string // the dedupd consumer name
	Lease    time.Duration
	Hooks    ParkHooks
}

// errCrash stands for the process dying with the event in hand: the
// outcome is unknown (it wraps context.Canceled), so nothing is recorded
// and the event stays in flight until its lease runs out.
var errCrash = fmt.Errorf("crash (injected): %w", context.Canceled)

// HandleParked processes one delivery of ev in park mode: Applied (with
// the parked events after it that came back), Duplicate, or Parked. An
// error means the message was not processed and should be redelivered.
func (c *ParkConsumer) HandleParked(ctx context.Context, ev Event) (Outcome, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return Later, err
	}
	res, err := c.Dedup.DoInOrder(ctx, c.Consumer, ev.Order, ev.Seq, client.InOrderOptions{
		LeaseTTL: c.Lease, Park: true, Payload: payload, Released: c.applyParked,
	}, func(_ context.Context, token int64) error { return c.Table.Apply(ev, token) })
	switch {
	case err != nil:
		return Later, err
	case res.Duplicate:
		return Duplicate, nil
	case res.Parked:
		return Parked, nil
	}
	// A parked event that could not be finished is not this message's
	// failure: it waits in dedupd for Pickup.
	return Applied, nil
}

// applyParked applies a parked event handed back, under its own token.
func (c *ParkConsumer) applyParked(_ context.Context, parked *client.ParkedEvent) error {
	var ev Event
	if err := json.Unmarshal(parked.GetPayload(), &ev); err != nil {
		return client.Terminal("UNPARSEABLE", err, nil)
	}
	if err := crashHook(c.Hooks.BeforeEffect, ev); err != nil {
		return err
	}
	if err := c.Table.Apply(ev, parked.GetFencingToken()); err != nil {
		return err
	}
	return crashHook(c.Hooks.AfterEffect, ev)
}

// crashHook runs h; an error from it is a crash.
func crashHook(h func(Event) error, ev Event) error {
	if err := hook(h, ev); err != nil {
		return errors.Join(errCrash, err)
	}
	return nil
}

// Pickup finishes, until ctx ends, the parked events whose holder went
// away: it takes each ready one with DoParked (once the dead holder's
// lease has run out) and applies it and those after it, pausing while
// none is ready. It returns how many events it finished.
func (c *ParkConsumer) Pickup(ctx context.Context, pause time.Duration) int {
	finished := 0
	for ctx.Err() == nil {
		res, err := c.Dedup.DoParked(ctx, c.Consumer, client.ParkedOptions{LeaseTTL: c.Lease}, c.applyParked)
		finished += len(res.Released)
		if err != nil || !res.Found {
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
		}
	}
	return finished
}
