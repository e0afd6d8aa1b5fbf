package api

import (
	"context"
	"errors"
	"time"

	"github.com/dedupd/dedupd/internal/ttlcache"
	"github.com/dedupd/dedupd/server/store"
)

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
	e := Effective{
		Store: store.Policy{
			DefaultLeaseTTL: orDefault(stored.DefaultLeaseTTL, d.Policy.DefaultLeaseTTL),
			CompletedTTL:    orDefault(stored.CompletedTTL, d.Policy.CompletedTTL),
			RejectedTTL:     orDefault(stored.RejectedTTL, d.Policy.RejectedTTL),
			ReleasedTTL:     orDefault(stored.ReleasedTTL, d.Policy.ReleasedTTL),
		},
		MaxLeaseTTL:    orDefault(stored.MaxLeaseTTL, d.Limits.MaxLeaseTTL),
		MaxResultBytes: int(orDefault(stored.MaxResultBytes, int64(d.Limits.MaxResultBytes))),
		RequireDigest:  stored.RequireDigest,
	}
	e.Store.DefaultLeaseTTL = min(e.Store.DefaultLeaseTTL, e.MaxLeaseTTL)
	return e
}

func orDefault[T time.Duration | int64](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// policyLoadTimeout bounds one shared policy read: it runs detached from
// the caller that started it, so it needs its own end.
const policyLoadTimeout = 10 * time.Second

// maxCachedPolicies bounds each policy cache.
const maxCachedPolicies = 10000

// policyCache returns the cache both policy resolvers keep their stored
// policies in, so that key and stream policies share one rule of
// staleness: a change made through another replica is seen by calls that
// start at most ttl after it was stored; one made through this replica
// (Invalidate) by the next call. A ttl of zero reads the store on every
// call. now nil is time.Now.
func policyCache[V any](read ttlcache.Load[string, V], ttl time.Duration, now func() time.Time) *ttlcache.Cache[string, V] {
	return ttlcache.New(read, ttlcache.Config{TTL: ttl, MaxEntries: maxCachedPolicies, LoadTimeout: policyLoadTimeout, Now: now})
}

// Policies resolves the policy in force for a consumer, caching each
// consumer's for at most ttl (see policyCache for what that bounds). Safe
// for concurrent use.
type Policies struct {
	defaults Defaults
	cache    *ttlcache.Cache[string, Effective]
}

// NewPolicies returns a resolver reading stored policies from st.
func NewPolicies(st store.Admin, d Defaults, ttl time.Duration) *Policies {
	return newPolicies(st, d, ttl, nil)
}

// newPolicies is NewPolicies on the clock now (nil: time.Now).
func newPolicies(st store.Admin, d Defaults, ttl time.Duration, now func() time.Time) *Policies {
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
	return &Policies{defaults: d, cache: policyCache(read, ttl, now)}
}

// Defaults returns the server defaults.
func (p *Policies) Defaults() Defaults { return p.defaults }

// Resolve returns the policy in force for consumer given its stored policy.
func (p *Policies) Resolve(stored store.ConsumerPolicy) Effective { return Resolve(stored, p.defaults) }

// For returns the policy in force for consumer. Errors are the store's.
func (p *Policies) For(ctx context.Context, consumer string) (Effective, error) {
	return p.cache.Get(ctx, consumer)
}

// Invalidate forgets consumer's cached policy after a change through this
// server, so that the next call reads the change.
func (p *Policies) Invalidate(consumer string) { p.cache.Invalidate(consumer) }
