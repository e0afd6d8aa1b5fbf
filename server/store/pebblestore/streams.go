package pebblestore

import (
	"context"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// ApplyStream is every write to one stream; a ClaimParked of any stream
// tries the streams with a ready event.
func (s *Store) ApplyStream(ctx context.Context, cmd store.StreamCommand) (store.StreamDecision, error) {
	if c, ok := cmd.(store.ClaimParkedParams); ok && c.Stream == "" {
		return s.claimAnyParked(ctx, c)
	}
	consumer, stream := store.StreamOf(cmd)
	return s.applyStream(ctx, consumer, stream, cmd)
}

// applyStream is every write to one stream, as Apply is for keys.
func (s *Store) applyStream(ctx context.Context, consumer, stream string, cmd store.StreamCommand) (store.StreamDecision, error) {
	if err := s.enterFor(ctx); err != nil {
		return store.StreamDecision{}, err
	}
	defer s.leave()
	defer s.streams.lockOne(consumer, stream)()
	k := rowKey(tableStream, consumer, stream)
	stored, err := getStream(s.db, k, consumer, stream)
	if err != nil {
		return store.StreamDecision{}, dbError("reading stream", err)
	}
	at := time.Now()
	var view store.ParkedView
	read, need := store.ParkedReadFor(stored, cmd, at)
	if need {
		if view, err = s.readParked(consumer, stream, read); err != nil {
			return store.StreamDecision{}, dbError("reading parked events", err)
		}
	}
	var budget *parkBudget
	if need && read.ConsumerBytes {
		budget = s.budgets.of(consumer)
		budget.mu.Lock()
		view.ConsumerBytes = budget.bytes
	}
	d, err := store.ApplyStreamParked(stored, view, cmd, at)
	delta := parkedDelta(stored, d, err)
	if budget != nil {
		if delta > 0 {
			budget.bytes += delta // reserved before the commit; see parkBudgets
		}
		budget.mu.Unlock()
	} else if delta > 0 {
		s.budgets.add(consumer, delta)
	}
	if err != nil {
		return store.StreamDecision{}, err
	}
	if !d.Write {
		return d, nil
	}
	b := s.db.NewBatch()
	defer b.Close()
	putStream(b, k, stored, &d.Stream)
	writeParked(b, consumer, stream, d)
	if err := b.Commit(pebble.Sync); err != nil {
		s.budgets.add(consumer, -max(delta, 0))
		return store.StreamDecision{}, dbError("writing stream", err)
	}
	s.budgets.add(consumer, min(delta, 0))
	s.commits.Commit(commitmetrics.KindStream, 1)
	return d, nil
}

// parkedDelta is how a decision changes its consumer's parked bytes.
func parkedDelta(stored *store.Stream, d store.StreamDecision, err error) int64 {
	if err != nil || !d.Write {
		return 0
	}
	var old int64
	if stored != nil {
		old = stored.ParkedBytes
	}
	return d.Stream.ParkedBytes - old
}

// getStream reads a stream; nil, nil when there is none.
func getStream(r pebble.Reader, k []byte, consumer, stream string) (*store.Stream, error) {
	return getRow(r, k, func(v []byte) (*store.Stream, error) { return decodeStream(v, consumer, stream) })
}

// putStream adds to b the write of next over old and its index changes.
func putStream(b *pebble.Batch, k []byte, old, next *store.Stream) {
	_ = b.Set(k, encodeStream(next), nil)
	var was time.Time
	if old != nil {
		was = old.ExpiresAt
	}
	moveExpiry(b, tableStreamExpiry, old != nil, was, next.ExpiresAt, next.Consumer, next.Stream)
	parked := old != nil && old.Parked > 0
	moveEntry(b, rowKey(tableStreamParked, next.Consumer, next.Stream), parked, next.Parked > 0, parked, nil)
	inFlight := old != nil && old.InFlight != 0
	moveEntry(b, rowKey(tableStreamPending, next.Consumer, next.Stream), inFlight, next.InFlight != 0,
		inFlight && old.LeaseExpiresAt.Equal(next.LeaseExpiresAt), appendTime(nil, next.LeaseExpiresAt))
}

// deleteStream adds to b the deletion of a stream's row and index entries.
func deleteStream(b *pebble.Batch, old *store.Stream) {
	_ = b.Delete(rowKey(tableStream, old.Consumer, old.Stream), nil)
	_ = b.SingleDelete(expiryKey(tableStreamExpiry, old.ExpiresAt, old.Consumer, old.Stream), nil)
	if old.InFlight != 0 {
		_ = b.SingleDelete(rowKey(tableStreamPending, old.Consumer, old.Stream), nil)
	}
	if old.Parked > 0 { // parked events go with their stream
		_ = b.SingleDelete(rowKey(tableStreamParked, old.Consumer, old.Stream), nil)
		prefix := parkedPrefix(old.Consumer, old.Stream)
		_ = b.DeleteRange(prefix, prefixEnd(prefix), nil)
	}
}

// ReadStream returns a live stream and, when asked, its parked summary.
func (s *Store) ReadStream(ctx context.Context, p store.ReadStreamParams) (store.StreamRead, error) {
	return store.ReadStreamOf(ctx, p, s.liveStream, s.parkedSummarySpan)
}

// liveStream returns a live stream.
func (s *Store) liveStream(ctx context.Context, consumer, stream string) (store.Stream, error) {
	if err := s.enterFor(ctx); err != nil {
		return store.Stream{}, err
	}
	defer s.leave()
	st, err := getStream(s.db, rowKey(tableStream, consumer, stream), consumer, stream)
	if err != nil {
		return store.Stream{}, dbError("get stream", err)
	}
	return store.LiveStream(st, time.Now())
}

// ListStreams lists live streams in stream order. With LeaseExpired it
// walks the index of in-flight streams rather than every stream.
func (s *Store) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return listRows(s, ctx, listing[store.Stream]{Op: "list streams", Rows: tableStream, Leases: tableStreamPending,
		ByLease: p.LeaseExpired, Consumer: p.Consumer, After: p.AfterStream, Limit: p.Limit,
		Decode: decodeStream, Keep: func(st *store.Stream, at time.Time) bool {
			return store.IsStreamLive(st, at) && (!p.LeaseExpired || st.InFlight != 0 && !st.LeaseLive(at))
		}})
}
