package api

import (
	"context"
	"errors"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// StreamPolicies resolves the stream rules in force for a consumer: the
// lease bounds of its key policy (through the shared, cached Policies) and
// its stored stream policy, with the server's stream TTL filling what that
// leaves unset. The stream policy is read on every call: it is one
// primary-key read, and a changed mode or start rule must apply at once.
type StreamPolicies struct {
	store      store.StreamStore
	keys       *Policies
	defaultTTL time.Duration
}

// NewStreamPolicies returns a resolver; defaultTTL of zero means
// store.DefaultStreamTTL.
func NewStreamPolicies(st store.StreamStore, keys *Policies, defaultTTL time.Duration) *StreamPolicies {
	if defaultTTL <= 0 {
		defaultTTL = store.DefaultStreamTTL
	}
	return &StreamPolicies{store: st, keys: keys, defaultTTL: defaultTTL}
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
	stored, err := p.store.GetStreamPolicy(ctx, consumer)
	if err != nil && !errors.Is(err, store.ErrNoPolicy) {
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
