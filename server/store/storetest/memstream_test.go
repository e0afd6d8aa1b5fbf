package storetest_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// memStreams is the smallest StreamStore that keeps the contract: one mutex
// makes every call atomic and store.ApplyStream takes every decision. It is
// the stream half of memBackend, the suite's self-test.
type memStreams struct {
	mu       sync.Mutex
	streams  map[[2]string]store.Stream
	policies map[string]store.ConsumerStreamPolicy
	// parked holds each stream's parked events by sequence.
	parked map[[2]string]map[int64]store.ParkedEvent
}

func newMemStreams() *memStreams {
	return &memStreams{streams: map[[2]string]store.Stream{}, policies: map[string]store.ConsumerStreamPolicy{},
		parked: map[[2]string]map[int64]store.ParkedEvent{}}
}

func (m *memStreams) apply(ctx context.Context, consumer, stream string, cmd store.StreamCommand) (store.StreamDecision, error) {
	if err := ctx.Err(); err != nil {
		return store.StreamDecision{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{consumer, stream}
	now, stored := time.Now(), m.load(k)
	var view store.ParkedView
	if r, need := store.ParkedReadFor(stored, cmd, now); need {
		view = m.readParked(k, r)
	}
	d, err := store.ApplyStreamParked(stored, view, cmd, now)
	if err == nil && d.Write {
		m.streams[k] = cloneStream(d.Stream)
		m.writeParked(k, d)
	}
	d.Stream = cloneStream(d.Stream)
	return d, err
}

// load returns a copy of the stored stream, nil when there is none.
func (m *memStreams) load(k [2]string) *store.Stream {
	st, ok := m.streams[k]
	if !ok {
		return nil
	}
	st = cloneStream(st)
	return &st
}

func (m *memStreams) ClaimStream(ctx context.Context, p store.ClaimStreamParams) (store.StreamClaimResult, error) {
	d, err := m.apply(ctx, p.Consumer, p.Stream, p)
	return store.StreamClaimResult{Outcome: d.Outcome, Stream: d.Stream, RetryAfter: d.RetryAfter}, err
}

func (m *memStreams) CompleteStream(ctx context.Context, p store.CompleteStreamParams) (store.StreamFinishResult, error) {
	d, err := m.apply(ctx, p.Consumer, p.Stream, p)
	return store.StreamFinishResult{Stream: d.Stream, Next: d.HandedOut}, err
}

func (m *memStreams) RejectStream(ctx context.Context, p store.RejectStreamParams) (store.StreamFinishResult, error) {
	d, err := m.apply(ctx, p.Consumer, p.Stream, p)
	return store.StreamFinishResult{Stream: d.Stream, Next: d.HandedOut}, err
}

func (m *memStreams) ReleaseStream(ctx context.Context, p store.ReleaseStreamParams) (store.Stream, error) {
	d, err := m.apply(ctx, p.Consumer, p.Stream, p)
	return d.Stream, err
}

func (m *memStreams) ExtendStreamLease(ctx context.Context, p store.ExtendStreamLeaseParams) (store.Stream, error) {
	d, err := m.apply(ctx, p.Consumer, p.Stream, p)
	return d.Stream, err
}

func (m *memStreams) ResetStream(ctx context.Context, p store.ResetStreamParams) (store.Stream, error) {
	d, err := m.apply(ctx, p.Consumer, p.Stream, p)
	return d.Stream, err
}

func (m *memStreams) GetStream(ctx context.Context, consumer, stream string) (store.Stream, error) {
	r, err := m.readStream(ctx, store.ReadStreamParams{Consumer: consumer, Stream: stream})
	return r.Stream, err
}

// readStream is the model's one read of a stream, as an engine's
// ReadStream: the live stream, and its parked summary when asked.
func (m *memStreams) readStream(ctx context.Context, p store.ReadStreamParams) (store.StreamRead, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{p.Consumer, p.Stream}
	st, ok := m.streams[k]
	if !ok || !store.IsStreamLive(&st, time.Now()) {
		return store.StreamRead{}, store.ErrNotFound
	}
	r := store.StreamRead{Stream: cloneStream(st)}
	if p.Parked {
		r.Parked = m.summary(k, st)
	}
	return r, ctx.Err()
}

func (m *memStreams) ListStreams(ctx context.Context, p store.ListStreamsParams) ([]store.Stream, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := store.Now(time.Now())
	var out []store.Stream
	for k, st := range m.streams {
		expired := st.InFlight != 0 && !now.Before(st.LeaseExpiresAt)
		if k[0] == p.Consumer && k[1] > p.AfterStream && store.IsStreamLive(&st, now) && (!p.LeaseExpired || expired) {
			out = append(out, cloneStream(st))
		}
	}
	slices.SortFunc(out, func(a, b store.Stream) int { return strings.Compare(a.Stream, b.Stream) })
	return out[:min(len(out), p.Limit)], ctx.Err()
}

func (m *memStreams) DeleteExpiredStreams(ctx context.Context, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, st := range m.streams {
		if n < limit && !store.IsStreamLive(&st, time.Now()) {
			delete(m.streams, k)
			delete(m.parked, k)
			n++
		}
	}
	return n, ctx.Err()
}

func (m *memStreams) PutStreamPolicy(ctx context.Context, p store.ConsumerStreamPolicy) (store.ConsumerStreamPolicy, error) {
	if err := p.Validate(); err != nil {
		return p, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p.UpdatedAt = store.Now(time.Now())
	m.policies[p.Consumer] = p
	return p, ctx.Err()
}

func (m *memStreams) GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := policyOf(m.policies, consumer, false)
	if err != nil {
		return p, err
	}
	return p, ctx.Err()
}

func (m *memStreams) DeleteStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, err := policyOf(m.policies, consumer, true)
	if err != nil {
		return p, err
	}
	return p, ctx.Err()
}

func cloneStream(st store.Stream) store.Stream {
	st.Digest = cloneBytes(st.Digest)
	if st.LastRejection != nil {
		r := *st.LastRejection
		r.Detail = cloneBytes(r.Detail)
		st.LastRejection = &r
	}
	return st
}

func (m *memStreams) StreamStats(ctx context.Context, consumer string) ([]store.ConsumerStreamStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := store.Now(time.Now())
	by := map[string]*store.ConsumerStreamStats{}
	for k, st := range m.streams {
		if (consumer != "" && k[0] != consumer) || !store.IsStreamLive(&st, now) {
			continue
		}
		c := by[k[0]]
		if c == nil {
			c = &store.ConsumerStreamStats{Consumer: k[0]}
			by[k[0]] = c
		}
		c.Streams++
		if st.InFlight == 0 {
			continue
		}
		c.InFlight++
		if !now.Before(st.LeaseExpiresAt) {
			c.LeaseExpired++
		}
		if c.OldestInFlightAt.IsZero() || st.UpdatedAt.Before(c.OldestInFlightAt) {
			c.OldestInFlightAt = st.UpdatedAt
		}
	}
	out := make([]store.ConsumerStreamStats, 0, len(by))
	for _, c := range by {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b store.ConsumerStreamStats) int { return strings.Compare(a.Consumer, b.Consumer) })
	return out, nil
}
