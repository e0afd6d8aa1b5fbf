// Package ttlcache keeps values read from a slower source (a store) for a
// bounded time. However many callers miss one key at once, the source is
// read once for them all; expired entries are swept, the size is bounded,
// one key can be dropped when its source changes, and the clock is
// injected so that tests can move it.
//
// Written here rather than taken from a library: hashicorp/golang-lru's
// expirable cache reads time.Now itself, expires entries from a goroutine
// of its own and shares no reads. The shared read is
// golang.org/x/sync/singleflight.
package ttlcache

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// DefaultMaxEntries is the bound when Config.MaxEntries is zero.
const DefaultMaxEntries = 10000

// DefaultLoadTimeout is the bound on one shared read when
// Config.LoadTimeout is zero.
const DefaultLoadTimeout = 10 * time.Second

// Config sets a cache's bounds. The zero Config caches nothing.
type Config struct {
	// TTL bounds how old a value Get returns may be, counted from the start
	// of the read that found it. Zero or less: every Get reads the source,
	// unshared.
	TTL time.Duration
	// MaxEntries bounds how many keys are held (zero: DefaultMaxEntries).
	MaxEntries int
	// LoadTimeout bounds one shared read (zero: DefaultLoadTimeout). A
	// shared read runs detached from the caller that started it, because
	// the others waiting on it must not fail when that caller goes away.
	LoadTimeout time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Load reads one key's value from the source. Its errors are returned by
// Get as they are and never cached.
type Load[K ~string, V any] func(ctx context.Context, key K) (V, error)

// Cache holds values of type V by key K. Keys are strings (of any string
// type) because the shared read is keyed by string. Safe for concurrent
// use.
type Cache[K ~string, V any] struct {
	load        Load[K, V]
	ttl         time.Duration
	loadTimeout time.Duration
	maxEntries  int
	now         func() time.Time

	mu      sync.Mutex
	entries map[K]entry[V]
	// gen counts invalidations. A read that started before one is not
	// cached: it may predate the change the invalidation announced.
	gen       uint64
	nextSweep time.Time
	flights   singleflight.Group
}

type entry[V any] struct {
	value   V
	expires time.Time
}

// loaded is what a shared read returns: the value, and when the read that
// found it started, which bounds how old the value may be.
type loaded[V any] struct {
	value   V
	started time.Time
}

// New returns a cache that reads missing keys with load.
func New[K ~string, V any](load Load[K, V], cfg Config) *Cache[K, V] {
	c := &Cache[K, V]{load: load, ttl: cfg.TTL, loadTimeout: cfg.LoadTimeout, maxEntries: cfg.MaxEntries,
		now: cfg.Now, entries: map[K]entry[V]{}}
	if c.maxEntries <= 0 {
		c.maxEntries = DefaultMaxEntries
	}
	if c.loadTimeout <= 0 {
		c.loadTimeout = DefaultLoadTimeout
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// Get returns key's value: the cached one while it is fresh, else the
// answer of a read of the source that this call shares with every other
// call missing key meanwhile. A call that gives up waiting gets its
// context's error; the shared read goes on for the others.
func (c *Cache[K, V]) Get(ctx context.Context, key K) (V, error) {
	if c.ttl <= 0 {
		return c.load(ctx, key)
	}
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[key]
	gen := c.gen
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.value, nil
	}
	ch := c.flights.DoChan(string(key), func() (any, error) {
		return c.fill(ctx, key, gen, now)
	})
	var zero V
	select {
	case res := <-ch:
		if res.Err != nil {
			return zero, res.Err
		}
		l := res.Val.(loaded[V])
		// This call joined a read that started more than ttl before it
		// (the read ran long): its answer may predate a change this call
		// must see. Read again, unshared.
		if l.started.Add(c.ttl).Before(now) {
			return c.load(ctx, key)
		}
		return l.value, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// fill is the shared read of key for callers that missed it. gen and
// started are those of the caller that started it.
func (c *Cache[K, V]) fill(ctx context.Context, key K, gen uint64, started time.Time) (loaded[V], error) {
	// A caller that missed just as the previous read finished starts a
	// new one: the cache, filled before that read ended, answers it.
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && started.Before(e.expires) {
		return loaded[V]{e.value, e.expires.Add(-c.ttl)}, nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.loadTimeout)
	defer cancel()
	v, err := c.load(ctx, key)
	if err != nil {
		return loaded[V]{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen == gen {
		// Expiry counts from the start of the read, so the bound holds
		// however long the read took.
		c.put(key, entry[V]{value: v, expires: started.Add(c.ttl)})
	}
	return loaded[V]{v, started}, nil
}

// put stores e under key, sweeping first when the cache is full or a ttl
// has passed since the last sweep. c.mu must be held.
func (c *Cache[K, V]) put(key K, e entry[V]) {
	if _, ok := c.entries[key]; !ok {
		if now := c.now(); len(c.entries) >= c.maxEntries || !now.Before(c.nextSweep) {
			c.sweep(now)
		}
	}
	c.entries[key] = e
}

// sweep drops the expired entries. If the cache is still full, every entry
// live, it drops arbitrary ones (map order is random) down to 7/8 of the
// bound, so that a cache full of live keys sweeps once per maxEntries/8
// new keys rather than on every one. c.mu must be held.
func (c *Cache[K, V]) sweep(now time.Time) {
	c.nextSweep = now.Add(c.ttl)
	for k, e := range c.entries {
		if !now.Before(e.expires) {
			delete(c.entries, k)
		}
	}
	if len(c.entries) < c.maxEntries {
		return
	}
	keep := min(c.maxEntries-1, c.maxEntries*7/8)
	for k := range c.entries {
		if len(c.entries) <= keep {
			break
		}
		delete(c.entries, k)
	}
}

// Invalidate drops key's cached value after a change to its source, so
// that the next Get reads the change. Reads in flight are neither cached
// nor shared with calls that start after this.
func (c *Cache[K, V]) Invalidate(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.entries, key)
	c.flights.Forget(string(key))
}

// Len reports how many entries are held, expired ones not yet swept
// included.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
