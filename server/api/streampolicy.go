package api

import (
	"context"
	"errors"
	"sync"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// StreamPolicies resolves the stream rules in force for a consumer: the
// lease bounds of its key policy (through the shared Policies) and its
// stored stream policy, with the server's stream TTL filling what that
// leaves unset. Stored stream policies are cached for at most cacheTTL, the
// same bound as key policies: a change through another replica applies
// within it, one through this replica (Invalidate) at the next call.
type StreamPolicies struct {
	store      store.StreamStore
	keys       *Policies
	defaultTTL time.Duration
	cacheTTL   time.Duration

	mu     sync.Mutex
	cached map[string]cachedStreamPolicy
	// gen counts invalidations; a read that started before one is not
	// cached.
	gen uint64
}

type cachedStreamPolicy struct {
	policy  store.ConsumerStreamPolicy
	expires time.Time
}

// NewStreamPolicies returns a resolver; defaultTTL of zero means
// store.DefaultStreamTTL, cacheTTL of zero reads the store on every call.
func NewStreamPolicies(st store.StreamStore, keys *Policies, defaultTTL, cacheTTL time.Duration) *StreamPolicies {
	if defaultTTL <= 0 {
		defaultTTL = store.DefaultStreamTTL
	}
	return &StreamPolicies{store: st, keys: keys, defaultTTL: defaultTTL, cacheTTL: cacheTTL,
		cached: map[string]cachedStreamPolicy{}}
}

// resolvedStreamPolicy is the stream policy in force for one call.
type resolvedStreamPolicy struct {
	Policy   store.StreamPolicy
	maxLease time.Duration
}

// For returns the policy in force for consumer. Errors are the store's.
func (p *StreamPolicies) For(ctx context.Context, consumer string) (resolvedStreamPolicy, error) {
	keys, err := p.keys.For(ctx, consumer)
	if err != nil {
		return resolvedStreamPolicy{}, err
	}
	stored, err := p.stored(ctx, consumer)
	if err != nil {
		return resolvedStreamPolicy{}, err
	}
	return resolvedStreamPolicy{
		Policy: store.StreamPolicy{
			DefaultLeaseTTL: keys.Store.DefaultLeaseTTL,
			StreamTTL:       orDefault(stored.StreamTTL, p.defaultTTL),
			Mode:            stored.Mode,
			Start:           stored.Start,
		},
		maxLease: keys.MaxLeaseTTL,
	}, nil
}

// stored returns the consumer's stored stream policy, zero when it has
// none, from the cache when it is fresh.
func (p *StreamPolicies) stored(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
	started := time.Now()
	p.mu.Lock()
	entry, ok := p.cached[consumer]
	gen := p.gen
	p.mu.Unlock()
	if ok && started.Before(entry.expires) {
		return entry.policy, nil
	}
	sp, err := p.store.GetStreamPolicy(ctx, consumer)
	switch {
	case errors.Is(err, store.ErrNoPolicy):
		sp = store.ConsumerStreamPolicy{Consumer: consumer}
	case err != nil:
		return store.ConsumerStreamPolicy{}, err
	}
	if p.cacheTTL > 0 {
		p.mu.Lock()
		if p.gen == gen {
			if len(p.cached) >= maxCachedPolicies {
				clear(p.cached)
			}
			p.cached[consumer] = cachedStreamPolicy{policy: sp, expires: started.Add(p.cacheTTL)}
		}
		p.mu.Unlock()
	}
	return sp, nil
}

// Invalidate drops a consumer's cached stream policy, after a change made
// through this server.
func (p *StreamPolicies) Invalidate(consumer string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	delete(p.cached, consumer)
}

var streamStartToProto = map[store.StreamStart]dedupv1.StreamStart{
	store.StartAtOne:        dedupv1.StreamStart_STREAM_START_ONE,
	store.StartAtFirstClaim: dedupv1.StreamStart_STREAM_START_FIRST_CLAIM,
}

// streamMode reads a mode; unspecified is empty (the stream's own).
func (v *validator) streamMode(field string, m dedupv1.StreamMode) store.StreamMode {
	switch m {
	case dedupv1.StreamMode_STREAM_MODE_UNSPECIFIED:
		return ""
	case dedupv1.StreamMode_STREAM_MODE_DENSE:
		return store.Dense
	case dedupv1.StreamMode_STREAM_MODE_VERSIONS:
		return store.Versions
	}
	v.fail(field, "holds %v, which is not a stream mode", m)
	return ""
}

func (v *validator) streamStart(field string, s dedupv1.StreamStart) store.StreamStart {
	switch s {
	case dedupv1.StreamStart_STREAM_START_UNSPECIFIED:
		return ""
	case dedupv1.StreamStart_STREAM_START_ONE:
		return store.StartAtOne
	case dedupv1.StreamStart_STREAM_START_FIRST_CLAIM:
		return store.StartAtFirstClaim
	}
	v.fail(field, "holds %v, which is not a start rule", s)
	return ""
}
