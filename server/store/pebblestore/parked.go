package pebblestore

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
)

// Park mode on Pebble: each parked event is a key of its own under its
// stream ('k', keys.go), read and written in the same batch as the stream's
// row, under the stream's lock; 'w' lists the streams that hold any, so
// that ClaimParked of any stream, the open gaps and the totals read only
// those.

// readParked reads what r names of one stream's parked events, but for
// the consumer's bytes, which parkBudgets keeps.
func (s *Store) readParked(consumer, stream string, r store.ParkedRead) (store.ParkedView, error) {
	var v store.ParkedView
	bg := context.Background()
	if r.Oldest {
		err := s.eachParked(bg, consumer, stream, 1, false, func(ev store.ParkedEvent) bool {
			if v.OldestParkedAt.IsZero() || ev.ParkedAt.Before(v.OldestParkedAt) {
				v.OldestParkedAt = ev.ParkedAt
			}
			return true
		})
		if err != nil {
			return v, err
		}
	}
	if r.To < r.From {
		return v, nil
	}
	err := s.eachParked(bg, consumer, stream, r.From, r.Payloads, func(ev store.ParkedEvent) bool {
		if ev.Sequence > r.To {
			return false
		}
		v.Events = append(v.Events, ev)
		return r.Limit <= 0 || len(v.Events) < r.Limit
	})
	return v, err
}

// eachParked calls fn with the stream's parked events from sequence from
// on, in order, until fn says to stop.
func (s *Store) eachParked(ctx context.Context, consumer, stream string, from int64, payloads bool, fn func(store.ParkedEvent) bool) error {
	prefix := parkedPrefix(consumer, stream)
	return s.iterate(ctx, parkedKey(consumer, stream, max(from, 0)), prefixEnd(prefix), func(k, v []byte) (bool, error) {
		seq := int64(binary.BigEndian.Uint64(k[len(prefix):]))
		ev, err := decodeParked(v, consumer, stream, seq, payloads)
		if err != nil {
			return false, err
		}
		return fn(ev), nil
	})
}

// writeParked adds a decision's parked writes to b, beside its stream's.
func writeParked(b *pebble.Batch, consumer, stream string, d store.StreamDecision) {
	if d.UnparkAll {
		prefix := parkedPrefix(consumer, stream)
		_ = b.DeleteRange(prefix, prefixEnd(prefix), nil)
	}
	for _, seq := range d.Unpark {
		_ = b.Delete(parkedKey(consumer, stream, seq), nil)
	}
	if ev := d.Park; ev != nil {
		_ = b.Set(parkedKey(consumer, stream, ev.Sequence), encodeParked(ev), nil)
	}
}

// claimAnyParked hands out a ready parked event of the first stream of
// the consumer that has one.
func (s *Store) claimAnyParked(ctx context.Context, p store.ClaimParkedParams) (store.StreamDecision, error) {
	one := func(ctx context.Context, p store.ClaimParkedParams) (store.StreamDecision, error) {
		return s.applyStream(ctx, p.Consumer, p.Stream, p)
	}
	if err := s.enter(); err != nil {
		return store.StreamDecision{}, err
	}
	candidates, err := s.readyStreams(ctx, p.Consumer, now())
	s.leave()
	if err != nil {
		return store.StreamDecision{}, dbError("finding parked events", err)
	}
	return store.ClaimParkedOf(ctx, p, candidates, one)
}

// readyStreams lists streams of consumer whose parked mark + 1 no live
// lease holds, in stream order.
func (s *Store) readyStreams(ctx context.Context, consumer string, at time.Time) ([]string, error) {
	var out []string
	err := s.scanConsumer(ctx, tableStreamParked, consumer, "", func(name string, _ []byte) (bool, error) {
		st, err := getStream(s.db, rowKey(tableStream, consumer, name), consumer, name)
		// Ready if its next event is parked: only then is that looked up.
		if err != nil || !store.ParkedReady(st, true, at) {
			return err == nil, err
		}
		_, closer, err := s.db.Get(parkedKey(consumer, name, st.HighWater+1))
		switch {
		case errors.Is(err, pebble.ErrNotFound):
			return true, nil
		case err != nil:
			return false, err
		}
		closer.Close()
		out = append(out, name)
		return len(out) < store.ReadyCandidates, nil
	})
	return out, err
}

// ListParked pages through a live stream's parked events.
func (s *Store) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	st, err := getStream(s.db, rowKey(tableStream, p.Consumer, p.Stream), p.Consumer, p.Stream)
	if err != nil {
		return nil, dbError("list parked", err)
	}
	if !store.IsStreamLive(st, now()) {
		return nil, nil
	}
	var out []store.ParkedEvent
	err = s.eachParked(ctx, p.Consumer, p.Stream, p.AfterSequence+1, false, func(ev store.ParkedEvent) bool {
		out = append(out, ev)
		return len(out) < p.Limit
	})
	if err != nil {
		return nil, dbError("list parked", err)
	}
	return out, nil
}

// parkedSpan is the span of a stream's parked events, read by walking
// them.
func (s *Store) parkedSpan(ctx context.Context, consumer, stream string) (store.ParkedSpan, error) {
	var span store.ParkedSpan
	err := s.eachParked(ctx, consumer, stream, 1, false, func(ev store.ParkedEvent) bool {
		if span.Lowest == 0 {
			span.Lowest = ev.Sequence
		}
		span.Highest = ev.Sequence
		if span.Oldest.IsZero() || ev.ParkedAt.Before(span.Oldest) {
			span.Oldest = ev.ParkedAt
		}
		return true
	})
	return span, err
}

// parkedSummarySpan is parkedSpan as ReadStream asks it, on an open store.
func (s *Store) parkedSummarySpan(ctx context.Context, consumer, stream string) (store.ParkedSpan, error) {
	if err := s.enter(); err != nil {
		return store.ParkedSpan{}, err
	}
	defer s.leave()
	span, err := s.parkedSpan(ctx, consumer, stream)
	if err != nil {
		return store.ParkedSpan{}, dbError("parked summary", err)
	}
	return span, nil
}

// ListOpenGaps lists live dense streams whose parked events wait on a gap,
// from the index of streams with parked events.
func (s *Store) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	at := now()
	limit := max(p.Limit, 1)
	lower := []byte{tableStreamParked}
	if p.AfterConsumer != "" || p.AfterStream != "" {
		lower = append(rowKey(tableStreamParked, p.AfterConsumer, p.AfterStream), 0x00)
	}
	var out []store.OpenGap
	err := s.iterate(ctx, lower, []byte{tableStreamParked + 1}, func(k, _ []byte) (bool, error) {
		c, name, ok := splitTuple(k[1:])
		if !ok {
			return false, errCorrupt
		}
		st, err := getStream(s.db, rowKey(tableStream, c, name), c, name)
		if err != nil || st == nil || !store.IsStreamLive(st, at) || st.Mode != store.Dense {
			return err == nil, err
		}
		span, err := s.parkedSpan(ctx, c, name)
		if err != nil {
			return false, err
		}
		if g, open := store.OpenGapOf(*st, span.Lowest, span.Oldest, at); open {
			out = append(out, g)
		}
		return len(out) < limit, nil
	})
	if err != nil {
		return nil, dbError("list open gaps", err)
	}
	return out, nil
}

// ParkedTotals sums every consumer's parked events of live streams.
func (s *Store) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	at := now()
	var out []store.ConsumerParked
	err := s.iterate(ctx, []byte{tableStreamParked}, []byte{tableStreamParked + 1}, func(k, _ []byte) (bool, error) {
		c, name, ok := splitTuple(k[1:])
		if !ok {
			return false, errCorrupt
		}
		st, err := getStream(s.db, rowKey(tableStream, c, name), c, name)
		if err != nil || st == nil || !store.IsStreamLive(st, at) {
			return err == nil, err
		}
		if len(out) == 0 || out[len(out)-1].Consumer != c {
			out = append(out, store.ConsumerParked{Consumer: c})
		}
		t := &out[len(out)-1]
		err = s.eachParked(ctx, c, name, 1, false, func(ev store.ParkedEvent) bool {
			t.Events++
			t.Bytes += ev.PayloadBytes
			if t.OldestParkedAt.IsZero() || ev.ParkedAt.Before(t.OldestParkedAt) {
				t.OldestParkedAt = ev.ParkedAt
			}
			return true
		})
		return err == nil, err
	})
	if err != nil {
		return nil, dbError("parked totals", err)
	}
	return out, nil
}
