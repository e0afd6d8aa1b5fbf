package policy

import (
	"context"
	"errors"
	"time"

	"github.com/dedupd/dedupd/internal/ttlcache"
	"github.com/dedupd/dedupd/server/store"
)

// StreamPolicyReader reads a consumer's stored stream policy;
// store.ErrNoPolicy when it has none.
type StreamPolicyReader interface {
	GetStreamPolicy(ctx context.Context, consumer string) (store.ConsumerStreamPolicy, error)
}

// Streams resolves the stream rules in force for a consumer: the lease
// bounds of its key policy (through the shared Keys) and its stored
// stream policy, with the server's stream TTL filling what that leaves
// unset. Stored stream policies are cached as key policies are (see
// newCache), for at most cacheTTL. Safe for concurrent use.
type Streams struct {
	keys       *Keys
	defaultTTL time.Duration
	stored     *ttlcache.Cache[string, store.ConsumerStreamPolicy]
}

// NewStreams returns a resolver reading stored stream policies from st;
// defaultTTL of zero means store.DefaultStreamTTL, cacheTTL of zero reads
// the store on every call.
func NewStreams(st StreamPolicyReader, keys *Keys, defaultTTL, cacheTTL time.Duration) *Streams {
	return newStreams(st, keys, defaultTTL, cacheTTL, nil)
}

// newStreams is NewStreams on the clock now (nil: time.Now).
func newStreams(st StreamPolicyReader, keys *Keys, defaultTTL, cacheTTL time.Duration, now func() time.Time) *Streams {
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
	return &Streams{keys: keys, defaultTTL: defaultTTL, stored: newCache(read, cacheTTL, now)}
}

// Stream is the stream policy in force for one call.
type Stream struct {
	Policy      store.StreamPolicy
	MaxLeaseTTL time.Duration
}

// For returns the policy in force for consumer. Errors are the store's.
func (p *Streams) For(ctx context.Context, consumer string) (Stream, error) {
	keys, err := p.keys.For(ctx, consumer)
	if err != nil {
		return Stream{}, err
	}
	stored, err := p.stored.Get(ctx, consumer)
	if err != nil {
		return Stream{}, err
	}
	return Stream{
		Policy: store.StreamPolicy{
			DefaultLeaseTTL: keys.Store.DefaultLeaseTTL,
			StreamTTL:       orDefault(stored.StreamTTL, p.defaultTTL),
			Mode:            stored.Mode,
			Start:           stored.Start,
			MaxParked:       stored.MaxParked,
			MaxParkedBytes:  p.Defaults().Limits.MaxParkedBytesPerConsumer,
			GapTimeout:      stored.GapTimeout,
			OnGapTimeout:    stored.OnGapTimeout,
		},
		MaxLeaseTTL: keys.MaxLeaseTTL,
	}, nil
}

// Defaults returns the server defaults, those of the key resolver.
func (p *Streams) Defaults() Defaults { return p.keys.Defaults() }

// Invalidate drops a consumer's cached stream policy, after a change made
// through this server.
func (p *Streams) Invalidate(consumer string) { p.stored.Invalidate(consumer) }
