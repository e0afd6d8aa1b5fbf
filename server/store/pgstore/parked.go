package pgstore

import (
	"context"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// Park mode on PostgreSQL and CockroachDB, in the shape of the other
// stream writes: no lock held across statements, but single statements
// decided by the pure rules and compared and set on the row they read.
// One attempt is:
//
//  1. read the stream's row, its row_version and the clock (the read of
//     compareAndSet);
//  2. read what store.ParkedReadFor names of its parked events, in one
//     statement that reads the row's row_version again (parkedview.go):
//     the view and that version are of one snapshot, so when the version
//     is still the one of 1, the row of 1 and the view belong together;
//     otherwise the attempt is retried;
//  3. let store.ApplyStreamParked decide, and write the row and its parked
//     events in one statement (parkedwrite.go) that lands only if the row
//     is still at the version read.
//
// Every write of a stream's parked events moves the stream's row_version
// in the same statement (the reaper deletes the row itself, and its
// parked events with it), so a version unchanged from 1 to 3 means that
// no parked event of the stream changed either. A lost compare-and-set is
// retried whole by withRetry, like a serialization failure.
//
// Why not a transaction: one that locked the row (SELECT ... FOR UPDATE),
// read the parked events and wrote was what this replaced. At
// SERIALIZABLE (CockroachDB's isolation, and PostgreSQL's when an
// operator makes it the default) concurrent deliveries of one stream then
// formed read/write dependencies and retried about three times per
// delivery (issue 29). Single statements conflict only when they race on
// one row, and then the same way at every isolation.
//
// The consumer's parked bytes (the park's byte budget) are summed by the
// statement of 2, which the compare-and-set does not cover: two streams
// of one consumer parking at once may both pass the budget, by an event
// each, as they could at read committed before.

// skipColumns are a stream's LastSkipped as its columns hold it.
type skipColumns struct {
	from, to int64
	cause    string
	at       *time.Time
}

func encodeSkip(r *store.SkippedRange) skipColumns {
	if r == nil {
		return skipColumns{}
	}
	at := r.At
	return skipColumns{from: r.From, to: r.To, cause: string(r.Cause), at: &at}
}

func (c skipColumns) decode() *store.SkippedRange {
	if c.cause == "" {
		return nil
	}
	r := &store.SkippedRange{From: c.from, To: c.to, Cause: store.SkipCause(c.cause)}
	if c.at != nil {
		r.At = store.Now(*c.at)
	}
	return r
}

// applyStreamParked decides and writes cmd with the stream's parked
// events, retried whole, from the read, on a lost compare-and-set.
func (s *Store) applyStreamParked(ctx context.Context, op, consumer, stream string, cmd store.StreamCommand) (store.StreamDecision, error) {
	var d store.StreamDecision
	err := s.withRetry(ctx, op, func(ctx context.Context) error {
		var err error
		d, err = s.decideParked(ctx, consumer, stream, cmd)
		return err
	})
	if err != nil {
		return store.StreamDecision{}, err
	}
	return d, nil
}

// decideParked is one attempt of applyStreamParked: read, decide, and
// write as a compare-and-set on the version read.
func (s *Store) decideParked(ctx context.Context, consumer, stream string, cmd store.StreamCommand) (store.StreamDecision, error) {
	stored, version, now, err := readVersioned(ctx, s, streamTable, consumer, stream)
	if err != nil {
		return store.StreamDecision{}, err
	}
	var view store.ParkedView
	if r, need := store.ParkedReadFor(stored, cmd, now); need {
		if view, err = s.readParkedAt(ctx, consumer, stream, r, version); err != nil {
			return store.StreamDecision{}, err
		}
	}
	d, err := store.ApplyStreamParked(stored, view, cmd, now)
	if err != nil || !d.Write {
		return d, err
	}
	if d.Stream, err = s.writeParked(ctx, d, stored != nil, version); err != nil {
		return store.StreamDecision{}, err
	}
	return d, nil
}
