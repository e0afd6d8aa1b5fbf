package policy

import (
	"time"

	"github.com/dedupd/dedupd/internal/ttlcache"
)

// loadTimeout bounds one shared policy read: it runs detached from the
// caller that started it, so it needs its own end.
const loadTimeout = 10 * time.Second

// maxCached bounds each policy cache.
const maxCached = 10000

// newCache returns the cache both resolvers keep their stored policies
// in, so that key and stream policies share one rule of staleness: a
// change made through another replica is seen by calls that start at most
// ttl after it was stored; one made through this process (Invalidate) by
// the next call. A ttl of zero reads the store on every call. now nil is
// time.Now.
func newCache[V any](read ttlcache.Load[string, V], ttl time.Duration, now func() time.Time) *ttlcache.Cache[string, V] {
	return ttlcache.New(read, ttlcache.Config{TTL: ttl, MaxEntries: maxCached, LoadTimeout: loadTimeout, Now: now})
}
