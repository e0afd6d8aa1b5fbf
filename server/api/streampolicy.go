package api

import (
	"context"
	"errors"
	"time"

	"github.com/dedupd/dedupd/internal/ttlcache"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// StreamPolicies resolves the stream rules in force for a consumer: the
// lease bounds of its key policy (through the shared Policies) and its
// stored stream policy, with the server's stream TTL filling what that
// leaves unset. Stored stream policies are cached as key policies are (see
// policyCache), for at most cacheTTL. Safe for concurrent use.
type StreamPolicies struct {
	keys       *Policies
	defaultTTL time.Duration
	stored     *ttlcache.Cache[string, store.ConsumerStreamPolicy]
}

// NewStreamPolicies returns a resolver reading stored stream policies from
// st; defaultTTL of zero means store.DefaultStreamTTL, cacheTTL of zero
// reads the store on every call.
func NewStreamPolicies(st store.StreamStore, keys *Policies, defaultTTL, cacheTTL time.Duration) *StreamPolicies {
	return newStreamPolicies(st, keys, defaultTTL, cacheTTL, nil)
}

// newStreamPolicies is NewStreamPolicies on the clock now (nil: time.Now).
func newStreamPolicies(st store.StreamStore, keys *Policies, defaultTTL, cacheTTL time.Duration, now func() time.Time) *StreamPolicies {
	if defaultTTL <= 0 {
		defaultTTL = store.DefaultStreamTTL
	}
	read := func(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error) {
		sp, err := st.GetStreamPolicy(ctx, consumer)
		if errors.Is(err, store.ErrNoPolicy) {
			return store.ConsumerStreamPolicy{Consumer: consumer}, nil
		}
		return sp, err
	}
	return &StreamPolicies{keys: keys, defaultTTL: defaultTTL, stored: policyCache(read, cacheTTL, now)}
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
	stored, err := p.stored.Get(ctx, consumer)
	if err != nil {
		return resolvedStreamPolicy{}, err
	}
	return resolvedStreamPolicy{
		Policy: store.StreamPolicy{
			DefaultLeaseTTL: keys.Store.DefaultLeaseTTL,
			StreamTTL:       orDefault(stored.StreamTTL, p.defaultTTL),
			Mode:            stored.Mode,
			Start:           stored.Start,
			MaxParked:       stored.MaxParked,
			MaxParkedBytes:  p.parkLimits().MaxParkedBytesPerConsumer,
			GapTimeout:      stored.GapTimeout,
			OnGapTimeout:    stored.OnGapTimeout,
		},
		maxLease: keys.MaxLeaseTTL,
	}, nil
}

// Invalidate drops a consumer's cached stream policy, after a change made
// through this server.
func (p *StreamPolicies) Invalidate(consumer string) { p.stored.Invalidate(consumer) }

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
