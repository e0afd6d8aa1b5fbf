package policy

import (
	"context"
	"errors"
	"time"

	"github.com/dedupd/dedupd/internal/ttlcache"
	"github.com/dedupd/dedupd/server/store"
)

// Limits are the bounds on what a caller may ask for (the serve flags).
// A consumer's stored policy may replace the first two for itself.
type Limits struct {
	// MaxLeaseTTL caps lease_ttl on Claim and ExtendLease.
	MaxLeaseTTL time.Duration
	// MaxResultBytes caps Complete's result and Reject's detail.
	MaxResultBytes int
	// MaxBatchItems caps the items of one batch call; zero means the API's
	// default (api.DefaultMaxBatchItems).
	MaxBatchItems int
	// MaxPageBytes bounds the encoded records of a ListRecords page; zero
	// means the API's ceiling (api.PageBytesCeiling). A record larger than
	// it comes alone on a page.
	MaxPageBytes int
	// MaxParkPayloadBytes caps a park claim's payload; zero means the
	// API's default (api.DefaultMaxParkPayloadBytes).
	// MaxParkedBytesPerConsumer bounds the payload bytes one consumer
	// holds parked; zero means no bound.
	MaxParkPayloadBytes       int
	MaxParkedBytesPerConsumer int64
}

// Defaults are the server-wide policy (the serve flags): what a consumer
// without a stored policy gets, and what fills each field a stored policy
// leaves unset.
type Defaults struct {
	Policy store.Policy
	Limits Limits
}

// Effective is the policy in force for one call: the store's share goes
// into every write, the limits into validation.
type Effective struct {
	Store          store.Policy
	MaxLeaseTTL    time.Duration
	MaxResultBytes int
	RequireDigest  bool
}

// Resolve fills the fields stored leaves unset (zero) from d. A default
// lease longer than the maximum in force is cut to the maximum, so that a
// server restarted with a lower --max-lease-ttl never hands out a default
// lease that callers could not ask for themselves.
func Resolve(stored store.ConsumerPolicy, d Defaults) Effective {
	defaultLease, maxLease := LeaseBounds(stored, d)
	return Effective{
		Store: store.Policy{
			DefaultLeaseTTL: min(defaultLease, maxLease),
			CompletedTTL:    orDefault(stored.CompletedTTL, d.Policy.CompletedTTL),
			RejectedTTL:     orDefault(stored.RejectedTTL, d.Policy.RejectedTTL),
			ReleasedTTL:     orDefault(stored.ReleasedTTL, d.Policy.ReleasedTTL),
		},
		MaxLeaseTTL:    maxLease,
		MaxResultBytes: int(orDefault(stored.MaxResultBytes, int64(d.Limits.MaxResultBytes))),
		RequireDigest:  stored.RequireDigest,
	}
}

// LeaseBounds are the default lease and the maximum lease stored sets,
// each filled from d when unset, before Resolve cuts the one to the other:
// what a policy being stored is checked on.
func LeaseBounds(stored store.ConsumerPolicy, d Defaults) (defaultLease, maxLease time.Duration) {
	return orDefault(stored.DefaultLeaseTTL, d.Policy.DefaultLeaseTTL), orDefault(stored.MaxLeaseTTL, d.Limits.MaxLeaseTTL)
}

func orDefault[T time.Duration | int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// KeyPolicyReader reads a consumer's stored key policy; store.ErrNoPolicy
// when it has none.
type KeyPolicyReader interface {
	GetPolicy(ctx context.Context, consumer string) (store.ConsumerPolicy, error)
}

// Keys resolves the key policy in force for a consumer, caching each
// consumer's for at most ttl (see newCache for what that bounds). Safe
// for concurrent use.
type Keys struct {
	defaults Defaults
	cache    *ttlcache.Cache[string, Effective]
}

// NewKeys returns a resolver reading stored policies from st.
func NewKeys(st KeyPolicyReader, d Defaults, ttl time.Duration) *Keys {
	return newKeys(st, d, ttl, nil)
}

// newKeys is NewKeys on the clock now (nil: time.Now).
func newKeys(st KeyPolicyReader, d Defaults, ttl time.Duration, now func() time.Time) *Keys {
	read := func(ctx context.Context, consumer string) (Effective, error) {
		stored, err := st.GetPolicy(ctx, consumer)
		if errors.Is(err, store.ErrNoPolicy) {
			return Resolve(store.ConsumerPolicy{Consumer: consumer}, d), nil
		}
		if err != nil {
			return Effective{}, err
		}
		return Resolve(stored, d), nil
	}
	return &Keys{defaults: d, cache: newCache(read, ttl, now)}
}

// Defaults returns the server defaults.
func (p *Keys) Defaults() Defaults { return p.defaults }

// Resolve returns the policy in force for consumer given its stored policy.
func (p *Keys) Resolve(stored store.ConsumerPolicy) Effective { return Resolve(stored, p.defaults) }

// For returns the policy in force for consumer. Errors are the store's.
func (p *Keys) For(ctx context.Context, consumer string) (Effective, error) {
	return p.cache.Get(ctx, consumer)
}

// Invalidate forgets consumer's cached policy after a change through this
// server, so that the next call reads the change.
func (p *Keys) Invalidate(consumer string) { p.cache.Invalidate(consumer) }
