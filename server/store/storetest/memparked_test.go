package storetest_test

import (
	"bytes"
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// memStreams' parked events: a map per stream, read and written inside the
// same lock as the stream, as ApplyStreamParked decides.

func (m *memStreams) readParked(k [2]string, r store.ParkedRead) store.ParkedView {
	var v store.ParkedView
	if r.ConsumerBytes {
		for pk, evs := range m.parked {
			if pk[0] == k[0] {
				for _, ev := range evs {
					v.ConsumerBytes += ev.PayloadBytes
				}
			}
		}
	}
	evs := m.parked[k]
	for _, seq := range slices.Sorted(maps.Keys(evs)) {
		ev := evs[seq]
		if v.OldestParkedAt.IsZero() || ev.ParkedAt.Before(v.OldestParkedAt) {
			v.OldestParkedAt = ev.ParkedAt
		}
		if seq < r.From || seq > r.To || (r.Limit > 0 && len(v.Events) >= r.Limit) {
			continue
		}
		ev.Payload = bytes.Clone(ev.Payload)
		if !r.Payloads {
			ev.Payload = nil
		}
		v.Events = append(v.Events, ev)
	}
	if !r.Oldest {
		v.OldestParkedAt = time.Time{}
	}
	return v
}

func (m *memStreams) writeParked(k [2]string, d store.StreamDecision) {
	if d.UnparkAll {
		delete(m.parked, k)
	}
	for _, seq := range d.Unpark {
		delete(m.parked[k], seq)
	}
	if ev := d.Park; ev != nil {
		if m.parked[k] == nil {
			m.parked[k] = map[int64]store.ParkedEvent{}
		}
		c := *ev
		c.Payload, c.Digest = bytes.Clone(ev.Payload), bytes.Clone(ev.Digest)
		m.parked[k][ev.Sequence] = c
	}
}

func (m *memStreams) ClaimParked(ctx context.Context, p store.ClaimParkedParams) (store.ParkedClaimResult, error) {
	one := func(ctx context.Context, p store.ClaimParkedParams) (store.StreamDecision, error) {
		return m.apply(ctx, p.Consumer, p.Stream, p)
	}
	if p.Stream != "" {
		d, err := one(ctx, p)
		return store.ParkedClaimOf(d), err
	}
	m.mu.Lock()
	var candidates []string
	for k, evs := range m.parked {
		if k[0] == p.Consumer && len(evs) > 0 {
			candidates = append(candidates, k[1])
		}
	}
	m.mu.Unlock()
	slices.Sort(candidates)
	d, err := store.ClaimParkedOf(ctx, p, candidates, one)
	return store.ParkedClaimOf(d), err
}

func (m *memStreams) ListParked(ctx context.Context, p store.ListParkedParams) ([]store.ParkedEvent, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.Consumer, p.Stream}
	if st, ok := m.streams[k]; !ok || !store.IsStreamLive(&st, time.Now()) {
		return nil, ctx.Err()
	}
	v := m.readParked(k, store.ParkedRead{From: p.AfterSequence + 1, To: 1<<63 - 1, Limit: p.Limit})
	return v.Events, ctx.Err()
}

func (m *memStreams) GetParkedSummary(ctx context.Context, consumer, stream string) (store.ParkedSummary, error) {
	r, err := m.readStream(ctx, store.ReadStreamParams{Consumer: consumer, Stream: stream, Parked: true})
	return r.Parked, err
}

// summary is what a store's aggregate read of k's parked events finds.
func (m *memStreams) summary(k [2]string, st store.Stream) store.ParkedSummary {
	v := m.readParked(k, store.ParkedRead{From: 1, To: 1<<63 - 1, Oldest: true})
	var low, high int64
	if n := len(v.Events); n > 0 {
		low, high = v.Events[0].Sequence, v.Events[n-1].Sequence
	}
	return store.ParkedSummaryOf(st, low, high, v.OldestParkedAt)
}

func (m *memStreams) ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	var out []store.OpenGap
	for k, st := range m.streams {
		if !store.IsStreamLive(&st, now) || st.Parked == 0 || cmp.Or(strings.Compare(k[0], p.AfterConsumer), strings.Compare(k[1], p.AfterStream)) <= 0 {
			continue
		}
		if g, open := store.OpenGapOf(st, m.summary(k, st).Lowest, m.summary(k, st).OldestParkedAt, now); open {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b store.OpenGap) int {
		return cmp.Or(strings.Compare(a.Consumer, b.Consumer), strings.Compare(a.Stream, b.Stream))
	})
	return out[:min(len(out), p.Limit)], ctx.Err()
}

func (m *memStreams) ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	by := map[string]*store.ConsumerParked{}
	for k, evs := range m.parked {
		if st, ok := m.streams[k]; !ok || !store.IsStreamLive(&st, time.Now()) || len(evs) == 0 {
			continue
		}
		c := by[k[0]]
		if c == nil {
			c = &store.ConsumerParked{Consumer: k[0]}
			by[k[0]] = c
		}
		for _, ev := range evs {
			c.Events++
			c.Bytes += ev.PayloadBytes
			if c.OldestParkedAt.IsZero() || ev.ParkedAt.Before(c.OldestParkedAt) {
				c.OldestParkedAt = ev.ParkedAt
			}
		}
	}
	var out []store.ConsumerParked
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, *by[name])
	}
	return out, ctx.Err()
}

func (m *memStreams) DropParked(ctx context.Context, p store.DropParkedParams) (store.DropParkedResult, error) {
	d, err := m.apply(ctx, p.Consumer, p.Stream, p)
	return store.DropParkedResult{Stream: d.Stream, Dropped: d.Dropped}, err
}

func (m *memStreams) SkipGap(ctx context.Context, p store.SkipGapParams) (store.SkipGapResult, error) {
	d, err := m.apply(ctx, p.Consumer, p.Stream, p)
	if err != nil {
		return store.SkipGapResult{}, err
	}
	return store.SkipGapResult{Stream: d.Stream, Skipped: *d.Skipped}, nil
}
