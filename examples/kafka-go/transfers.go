package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dedupd/dedupd/client"
)

// Event is one record of the transfers topic. ID is stable across
// redeliveries and producer retries: it is the dedupd key. The record's
// Kafka key is the account, so one account's events stay in order on one
// partition.
type Event struct {
	ID      string `json:"id"`
	Account string `json:"account"`
	Amount  int64  `json:"amount"`
}

// errMalformed: a record that is not an event; it can never succeed.
var errMalformed = errors.New("malformed event")

// Transfers books each event once in the ledger, through dedupd's
// two-phase pattern with Settle.
type Transfers struct {
	Dedup    *client.Client
	Ledger   *Ledger
	Consumer string
	Lease    time.Duration
	// NoSettle turns Settle off, to show what goes wrong without it (the
	// test's failing run). Never set it in a real consumer.
	NoSettle bool
	// hooks observe and crash the consumer at its crash points (tests).
	hooks hooks
}

// Handle books the event in value unless an earlier attempt did, and
// returns its id and Do's outcome; Disposition says what to do next.
func (t *Transfers) Handle(ctx context.Context, value []byte) (string, client.DoResult, error) {
	var ev Event
	if err := json.Unmarshal(value, &ev); err != nil || ev.ID == "" {
		return "", client.DoResult{}, fmt.Errorf("%w: %.64q", errMalformed, value)
	}
	t.hooks.at(pointPolled, ev.ID)
	opt := client.DoOptions{LeaseTTL: t.Lease, MaxWait: 2 * t.Lease, Owner: "kafka-go",
		// Settle runs when an earlier holder of the key may have posted
		// (Attempt.Number > 1): it asks the ledger before fn posts
		// again. An error here leaves the claim PENDING: the record is
		// retried and Settle runs again after the lease.
		Settle: func(ctx context.Context, a client.Attempt) ([]byte, bool, error) {
			t.hooks.takeover(ev.ID, a.Number)
			id, found, err := t.Ledger.Lookup(ctx, ev.ID)
			return []byte(id), found, err
		}}
	if t.NoSettle {
		opt.Settle = nil
	}
	res, err := t.Dedup.Do(ctx, t.Consumer, ev.ID, client.Digest(value), opt,
		func(ctx context.Context, a client.Attempt) ([]byte, error) {
			if t.NoSettle && a.Number > 1 {
				t.hooks.takeover(ev.ID, a.Number)
			}
			t.hooks.at(pointClaimed, ev.ID)
			// The post cannot be fenced by the token, so check the lease
			// right before it: Do cancels ctx when the lease is lost.
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			id, err := t.Ledger.Post(ctx, ev)
			if err != nil {
				return nil, err
			}
			t.hooks.at(pointPosted, ev.ID)
			return []byte(id), nil
		})
	if res.Settled {
		t.hooks.settled(ev.ID)
	}
	return ev.ID, res, err
}

// Action is what the consumer does with a record after Do.
type Action int

// Kafka has no per-record nack: a partition is a log, and its committed
// offset says "everything before here has its outcome". So a record is
// retried in place (the partition waits), and one that can never succeed
// is copied to a dead-letter topic before its offset is committed.
const (
	// Commit: the key has its outcome (completed now, replayed or
	// settled); commit the record's offset.
	Commit Action = iota
	// Retry: run Handle again after the delay; the next attempt settles,
	// replays or waits.
	Retry
	// DeadLetter: the event can never succeed (a stored rejection, a
	// digest mismatch, a malformed record); produce it to the dead-letter
	// topic, then commit.
	DeadLetter
)

// Disposition maps Do's outcome to what to do with the record, after the
// table in docs/guarantees.md. lease is the lease length: a claim left
// PENDING (unknown outcome) can only be taken over once it has run out.
func Disposition(err error, lease time.Duration) (Action, time.Duration) {
	switch {
	case err == nil:
		return Commit, 0
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
