package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dedupd/dedupd/client"
)

// Event is one message of the payments subject. ID is stable across
// redeliveries and producer retries: it is the dedupd key.
type Event struct {
	ID      string `json:"id"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// errMalformed: a message that is not an event; it can never succeed.
var errMalformed = errors.New("malformed event")

// Payments charges each event once, through dedupd's two-phase pattern
// with Settle.
type Payments struct {
	Dedup    *client.Client
	Gateway  *Gateway
	Consumer string
	Lease    time.Duration
	// NoSettle turns Settle off, to show what goes wrong without it (the
	// test's failing run). Never set it in a real consumer.
	NoSettle bool
	// hooks observe and crash the consumer at its crash points (tests).
	hooks hooks
}

// Handle charges the event in data unless an earlier attempt did, and
// returns its id and Do's outcome; Disposition says what to do with the
// message.
func (p *Payments) Handle(ctx context.Context, data []byte) (string, client.DoResult, error) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil || ev.ID == "" {
		return "", client.DoResult{}, fmt.Errorf("%w: %.64q", errMalformed, data)
	}
	opt := client.DoOptions{LeaseTTL: p.Lease, MaxWait: 2 * p.Lease, Owner: "nats-payments",
		// Settle runs when an earlier holder of the key may have charged
		// (Attempt.Number > 1): it asks the gateway before fn charges
		// again. An error here leaves the claim PENDING: the message is
		// nacked and Settle runs again after the lease.
		Settle: func(ctx context.Context, a client.Attempt) ([]byte, bool, error) {
			p.hooks.takeover(ev.ID, a.Number)
			id, found, err := p.Gateway.Lookup(ctx, ev.ID)
			return []byte(id), found, err
		}}
	if p.NoSettle {
		opt.Settle = nil
	}
	res, err := p.Dedup.Do(ctx, p.Consumer, ev.ID, client.Digest(data), opt,
		func(ctx context.Context, a client.Attempt) ([]byte, error) {
			if p.NoSettle && a.Number > 1 {
				p.hooks.takeover(ev.ID, a.Number)
			}
			p.hooks.at(pointClaimed, ev.ID, a.Number == 1)
			// The charge cannot be fenced by the token, so check the lease
			// right before it: Do cancels ctx when the lease is lost.
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			id, err := p.Gateway.Charge(ctx, ev.ID, ev.Amount)
			if err != nil {
				return nil, err
			}
			p.hooks.at(pointCharged, ev.ID, a.Number == 1)
			return []byte(id), nil
		})
	if res.Settled {
		p.hooks.settled(ev.ID)
	}
	return ev.ID, res, err
}

// Action is what a consumer does with a message after Do.
type Action int

// The actions of docs/guarantees.md's ack/nack table.
const (
	// Ack: the key has its outcome (completed now, replayed or settled).
	Ack Action = iota
	// Retry: nack with requeue after Delay; the redelivery settles,
	// replays or waits.
	Retry
	// DeadLetter: the event can never succeed (a stored rejection, a
	// digest mismatch); take it off the stream for a human.
	DeadLetter
)

// Disposition maps Do's outcome to what to do with the message, following
// the table in docs/guarantees.md. lease is the lease length: a claim left
// PENDING (unknown outcome) can only be taken over once it has run out.
func Disposition(err error, lease time.Duration) (Action, time.Duration) {
	switch {
	case err == nil:
		return Ack, 0
	case errors.Is(err, client.ErrRejected), errors.Is(err, client.ErrDigestMismatch), errors.Is(err, errMalformed):
		return DeadLetter, 0
	case errors.Is(err, client.ErrOutcomeUnknown), errors.Is(err, client.ErrLeaseLost),
		errors.Is(err, client.ErrInProgressTimeout):
		return Retry, lease
	}
	// fn failed (the key was released) or dedupd was unreachable: retry
	// soon; the next attempt settles first.
	return Retry, lease / 4
}
