package api

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

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
// the caller that started it (see Policies.load), so it needs its own end.
const policyLoadTimeout = 10 * time.Second

// maxCachedPolicies bounds the cache; past it expired entries are dropped,
// and if that is not enough the whole cache is.
const maxCachedPolicies = 10000

// Policies resolves the policy in force for a consumer, caching each
// consumer's for at most ttl. That is the bound on how stale a replica's
// view may be: a change made through another replica is seen by calls that
// start at most ttl after it was stored. A change made through this replica
// (Invalidate) is seen by the next call. A ttl of zero reads the store on
// every call. Safe for concurrent use.
type Policies struct {
	store    store.Admin
	defaults Defaults
	ttl      time.Duration
	now      func() time.Time

	mu      sync.Mutex
	entries map[string]cachedPolicy
	// gen counts invalidations. A load started before one must neither be
	// cached nor shared with calls that start after it, so it is part of
	// the singleflight key and checked before caching.
	gen     uint64
	flights singleflight.Group
}

type cachedPolicy struct {
	effective Effective
	expires   time.Time
}

// NewPolicies returns a resolver reading stored policies from st.
func NewPolicies(st store.Admin, d Defaults, ttl time.Duration) *Policies {
	return &Policies{store: st, defaults: d, ttl: ttl, now: time.Now, entries: map[string]cachedPolicy{}}
}

// Defaults returns the server defaults.
func (p *Policies) Defaults() Defaults { return p.defaults }

// Resolve returns the policy in force for consumer given its stored policy.
func (p *Policies) Resolve(stored store.ConsumerPolicy) Effective { return Resolve(stored, p.defaults) }

// For returns the policy in force for consumer. Errors are the store's.
func (p *Policies) For(ctx context.Context, consumer string) (Effective, error) {
	if p.ttl <= 0 {
		return p.read(ctx, consumer)
	}
	now := p.now()
	p.mu.Lock()
	entry, ok := p.entries[consumer]
	gen := p.gen
	p.mu.Unlock()
	if ok && now.Before(entry.expires) {
		return entry.effective, nil
	}
	// Concurrent misses for one consumer share one read, so an expiry does
	// not send every in-flight call to the store at once.
	ch := p.flights.DoChan(consumer+"\x00"+strconv.FormatUint(gen, 10), func() (any, error) {
		return p.load(ctx, consumer, gen, now)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return Effective{}, res.Err
		}
		loaded := res.Val.(loadedPolicy)
		// A read that started more than ttl before this call may predate
		// a change this call must see: that happens when this call joined
		// a read that ran longer than ttl. Read again, unshared.
		if loaded.started.Add(p.ttl).Before(now) {
			return p.read(ctx, consumer)
		}
		return loaded.effective, nil
	case <-ctx.Done():
		return Effective{}, ctx.Err()
	}
}

// loadedPolicy is what a shared read returns: the policy, and when the
// read that found it started, which bounds how old it may be.
type loadedPolicy struct {
	effective Effective
	started   time.Time
}

// load reads and caches one consumer's policy. It is shared by every
// caller that missed meanwhile, so it must not fail because the caller
// that happened to start it went away.
func (p *Policies) load(ctx context.Context, consumer string, gen uint64, started time.Time) (loadedPolicy, error) {
	// A caller that missed just as the previous read finished starts a new
	// one: the cache, filled before that read ended, answers it.
	p.mu.Lock()
	entry, ok := p.entries[consumer]
	p.mu.Unlock()
	if ok && started.Before(entry.expires) {
		return loadedPolicy{entry.effective, entry.expires.Add(-p.ttl)}, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), policyLoadTimeout)
	defer cancel()
	e, err := p.read(ctx, consumer)
	if err != nil {
		return loadedPolicy{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gen == gen {
		if len(p.entries) >= maxCachedPolicies {
			p.sweep(started)
		}
		// Measured from the start of the read, so the bound holds however
		// long the read took.
		p.entries[consumer] = cachedPolicy{effective: e, expires: started.Add(p.ttl)}
	}
	return loadedPolicy{e, started}, nil
}

// sweep drops expired entries, or everything if none has expired. p.mu
// must be held.
func (p *Policies) sweep(now time.Time) {
	for c, e := range p.entries {
		if !now.Before(e.expires) {
			delete(p.entries, c)
		}
	}
	if len(p.entries) >= maxCachedPolicies {
		clear(p.entries)
	}
}

func (p *Policies) read(ctx context.Context, consumer string) (Effective, error) {
	stored, err := p.store.GetPolicy(ctx, consumer)
	if errors.Is(err, store.ErrNoPolicy) {
		return Resolve(store.ConsumerPolicy{Consumer: consumer}, p.defaults), nil
	}
	if err != nil {
		return Effective{}, err
	}
	return Resolve(stored, p.defaults), nil
}

// Invalidate forgets consumer's cached policy after a change through this
// server, so that the next call reads the change.
func (p *Policies) Invalidate(consumer string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen++
	delete(p.entries, consumer)
}
