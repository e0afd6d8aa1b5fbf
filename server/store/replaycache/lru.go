package replaycache

import (
	"container/list"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// lru is a byte-bounded map of records that evicts the least recently
// used first, approximately: a hit only marks its entry used, under a read
// lock, and eviction gives a marked entry a second chance (the CLOCK
// algorithm). So replays of one shard run side by side instead of queueing
// on a lock to reorder a list. It is split into shards so that concurrent
// writers rarely wait on one lock.
type lru struct {
	seed   maphash.Seed
	shards [shardCount]shard
}

const shardCount = 16

// entryOverhead approximates what an entry costs beyond its byte fields:
// the record's fixed fields, the list element, the map slot and the
// allocator's rounding. Measured: 550 heap bytes for an entry of 64 result
// bytes and short strings, which this makes the accounted size.
const entryOverhead = 384

type shard struct {
	mu       sync.RWMutex
	hits     atomic.Int64
	misses   atomic.Int64
	maxBytes int64
	bytes    int64
	order    *list.List // front is most recently used; values are *entry
	entries  map[entryKey]*list.Element
}

type entryKey struct{ consumer, key string }

type entry struct {
	key        entryKey
	rec        store.Record
	validUntil time.Time
	size       int64
	used       atomic.Bool // hit since eviction last looked at it
}

// Stats are the cache's counters.
type Stats struct {
	Hits, Misses   int64
	Entries, Bytes int64
}

func newLRU(maxBytes int64) *lru {
	c := &lru{seed: maphash.MakeSeed()}
	for i := range c.shards {
		c.shards[i] = shard{maxBytes: maxBytes / shardCount, order: list.New(), entries: map[entryKey]*list.Element{}}
	}
	return c
}

func (c *lru) shard(k entryKey) *shard {
	return &c.shards[maphash.Comparable(c.seed, k)%shardCount]
}

func (c *lru) get(consumer, key string, now time.Time) (store.Record, bool) {
	k := entryKey{consumer, key}
	s := c.shard(k)
	s.mu.RLock()
	el, found := s.entries[k]
	var (
		e     *entry
		fresh bool
	)
	if found {
		e = el.Value.(*entry)
		fresh = now.Before(e.validUntil)
	}
	var rec store.Record
	if fresh {
		e.used.Store(true)
		rec = e.rec
	}
	s.mu.RUnlock()
	if found && !fresh {
		s.removeStale(k, el)
	}
	if fresh {
		s.hits.Add(1)
	} else {
		s.misses.Add(1)
	}
	return rec, fresh
}

// removeStale removes the entry el of k, found past its time under the
// read lock, unless a put has replaced it since.
func (s *shard) removeStale(k entryKey, el *list.Element) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.entries[k]; ok && cur == el {
		s.removeLocked(el)
	}
}

func (c *lru) put(rec store.Record, validUntil time.Time) {
	k := entryKey{rec.Consumer, rec.Key}
	e := &entry{key: k, rec: rec, validUntil: validUntil, size: sizeOf(rec)}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.size > s.maxBytes {
		return
	}
	if el, ok := s.entries[k]; ok {
		s.removeLocked(el)
	}
	s.entries[k] = s.order.PushFront(e)
	s.bytes += e.size
	for s.bytes > s.maxBytes {
		// Each pass either clears a mark or removes an entry, so this ends.
		oldest := s.order.Back()
		if oldest.Value.(*entry).used.Swap(false) {
			s.order.MoveToFront(oldest)
			continue
		}
		s.removeLocked(oldest)
	}
}

func (c *lru) remove(consumer, key string) {
	k := entryKey{consumer, key}
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.entries[k]; ok {
		s.removeLocked(el)
	}
}

func (c *lru) clear() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		s.order.Init()
		s.entries = map[entryKey]*list.Element{}
		s.bytes = 0
		s.mu.Unlock()
	}
}

func (c *lru) stats() Stats {
	var st Stats
	for i := range c.shards {
		s := &c.shards[i]
		st.Hits += s.hits.Load()
		st.Misses += s.misses.Load()
		s.mu.Lock()
		st.Entries += int64(len(s.entries))
		st.Bytes += s.bytes
		s.mu.Unlock()
	}
	return st
}

func (s *shard) removeLocked(el *list.Element) {
	e := s.order.Remove(el).(*entry)
	delete(s.entries, e.key)
	s.bytes -= e.size
}

// sizeOf is what an entry for rec accounts for: its variable-length fields
// (the consumer and key twice, in the map key and the record) and a fixed
// overhead.
func sizeOf(rec store.Record) int64 {
	n := 2*(len(rec.Consumer)+len(rec.Key)) + len(rec.Digest) + len(rec.Owner) + len(rec.Result)
	if r := rec.Rejection; r != nil {
		n += len(r.Reason) + len(r.Message) + len(r.Detail) + 48
	}
	return int64(n + entryOverhead)
}
