package pebblestore

import (
	"context"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// streamStats counts live streams per consumer in one pass over their rows.
func (s *Store) streamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	lower, upper := []byte{tableStream}, []byte{tableStream + 1}
	if consumer != "" {
		lower = consumerPrefix(tableStream, consumer)
		upper = prefixEnd(lower)
	}
	at := now()
	var out []store.ConsumerStreamStats
	err := s.iterate(ctx, lower, upper, func(k, v []byte) (bool, error) {
		c, name, ok := splitTuple(k[1:])
		if !ok {
			return false, errCorrupt
		}
		st, err := decodeStream(v, c, name)
		if err != nil || !store.IsStreamLive(st, at) {
			return err == nil, err
		}
		if len(out) == 0 || out[len(out)-1].Consumer != c {
			out = append(out, store.ConsumerStreamStats{Consumer: c})
		}
		sum := &out[len(out)-1]
		sum.Streams++
		if st.InFlight != 0 {
			sum.InFlight++
			if !st.LeaseLive(at) {
				sum.LeaseExpired++
			}
			if sum.OldestInFlightAt.IsZero() || st.UpdatedAt.Before(sum.OldestInFlightAt) {
				sum.OldestInFlightAt = st.UpdatedAt
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, dbError("stream stats", err)
	}
	return out, nil
}

// Leases sums up the claims in flight of one kind per consumer, reading
// only the rows of that kind's index.
func (s *Store) Leases(ctx context.Context, kind store.Kind) ([]store.LeaseStats, error) {
	leases, err := store.PickKind(kind, s.pendingLeases, s.inFlightLeases)
	if err != nil {
		return nil, err
	}
	return leases(ctx)
}

// pendingLeases sums up the pending claims per consumer from the index of
// Pending records ('p'), reading only their rows.
func (s *Store) pendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return s.leaseStats(ctx, "pending leases", tablePending, func(c, name string) (bool, time.Time, time.Time, error) {
		rec, err := getRecord(s.db, rowKey(tableRecord, c, name), c, name)
		if err != nil || rec == nil || rec.State != store.Pending || !store.IsLive(rec, now()) {
			return false, time.Time{}, time.Time{}, err
		}
		return true, rec.UpdatedAt, rec.LeaseExpiresAt, nil
	})
}

// inFlightLeases sums up the streams' claims in flight per consumer from
// the index of in-flight streams ('q').
func (s *Store) inFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	return s.leaseStats(ctx, "in-flight leases", tableStreamPending, func(c, name string) (bool, time.Time, time.Time, error) {
		st, err := getStream(s.db, rowKey(tableStream, c, name), c, name)
		if err != nil || st == nil || st.InFlight == 0 || !store.IsStreamLive(st, now()) {
			return false, time.Time{}, time.Time{}, err
		}
		return true, st.UpdatedAt, st.LeaseExpiresAt, nil
	})
}

// leaseStats walks one index of claims in flight; row says whether an
// entry's row is a live claim in flight, and its times.
func (s *Store) leaseStats(ctx context.Context, op string, index byte,
	row func(consumer, name string) (held bool, updated, leaseEnd time.Time, err error)) ([]store.LeaseStats, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	at := now()
	tally := store.LeaseTally{}
	err := s.iterate(ctx, []byte{index}, []byte{index + 1}, func(k, _ []byte) (bool, error) {
		c, name, ok := splitTuple(k[1:])
		if !ok {
			return false, errCorrupt
		}
		held, updated, leaseEnd, err := row(c, name)
		if err != nil || !held {
			return err == nil, err
		}
		tally.Add(c, updated, leaseEnd, at)
		return true, nil
	})
	if err != nil {
		return nil, dbError(op, err)
	}
	return tally.Sorted(), nil
}
