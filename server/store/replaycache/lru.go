package replaycache

import (
	"container/list"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// lru is a byte-bounded least-recently-used map of records, split into
// shards so that concurrent callers rarely wait on one lock.
type lru struct {
	seed   maphash.Seed
	shards [shardCount]shard
	hits   atomic.Int64
	misses atomic.Int64
}

const shardCount = 16

// entryOverhead approximates what an entry costs beyond its byte fields:
// the record's fixed fields, the list element, the map slot and the
// allocator's rounding. Measured: 550 heap bytes for an entry of 64 result
// bytes and short strings, which this makes the accounted size.
const entryOverhead = 384

type shard struct {
	mu       sync.Mutex
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
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(k.consumer)
	h.WriteByte(0)
	h.WriteString(k.key)
	return &c.shards[h.Sum64()%shardCount]
}

func (c *lru) get(consumer, key string, now time.Time) (store.Record, bool) {
	k := entryKey{consumer, key}
	s := c.shard(k)
	s.mu.Lock()
	el, ok := s.entries[k]
	if ok && !now.Before(el.Value.(*entry).validUntil) {
		s.removeLocked(el)
		ok = false
	}
	var rec store.Record
	if ok {
		s.order.MoveToFront(el)
		rec = el.Value.(*entry).rec
	}
	s.mu.Unlock()
	if ok {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	return rec, ok
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
		s.removeLocked(s.order.Back())
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
	st := Stats{Hits: c.hits.Load(), Misses: c.misses.Load()}
	for i := range c.shards {
		s := &c.shards[i]
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
