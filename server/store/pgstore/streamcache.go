package pgstore

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// streamCache remembers, for the streams this store wrote or read last,
// the row as the database returned it and its row_version: the expected
// previous state of the next write's read-free compare-and-set
// (streamwrite.go). It is never an answer: a write decided on a remembered
// row lands only if the row is still exactly that row, so a stale entry
// (another server wrote the stream, the reaper deleted it) costs one
// statement that changes nothing, and is then forgotten. That holds for
// parked state too: every parked write moves the row's version
// (parked.go), so a remembered row from before it never lets a write skip
// the parked events; applyStream forgets a stream it writes with them.
//
// It holds at most streamCacheEntries entries, of at most
// streamCacheMaxBytes each (a stream with a larger rejection detail is
// not remembered), so its memory is bounded whatever callers send: about
// 10 MiB at worst.
type streamCache struct {
	mu   sync.Mutex
	rows map[recordKey]cachedStream // guarded by mu
}

const (
	streamCacheEntries  = 4096
	streamCacheMaxBytes = 2048
)

// cachedStream is a row as stored, with its row_version.
type cachedStream struct {
	st      store.Stream
	version int64
}

func newStreamCache() *streamCache {
	return &streamCache{rows: make(map[recordKey]cachedStream)}
}

func (c *streamCache) get(k recordKey) (cachedStream, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	row, ok := c.rows[k]
	return row, ok
}

// put remembers row as the stream's, replacing any older entry; when the
// cache is full an arbitrary entry makes room.
func (c *streamCache) put(k recordKey, row cachedStream) {
	if streamBytes(&row.st) > streamCacheMaxBytes {
		c.forget(k)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.rows[k]; !ok && len(c.rows) >= streamCacheEntries {
		for other := range c.rows {
			delete(c.rows, other)
			break
		}
	}
	c.rows[k] = row
}

func (c *streamCache) forget(k recordKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rows, k)
}

// streamBytes is about what a stream holds in memory beyond its fixed
// fields.
func streamBytes(st *store.Stream) int {
	n := len(st.Consumer) + len(st.Stream) + len(st.Digest) + len(st.Owner)
	if r := st.LastRejection; r != nil {
		n += len(r.Reason) + len(r.Message) + len(r.Detail)
	}
	return n
}

// dbClock estimates the database's clock from this process's: the offset
// between the two as last seen in a statement's statement_timestamp(), and
// never earlier than the latest reading seen (a reading is the statement's
// start, so the offset comes out low by up to a round trip, and a write
// right after a write would otherwise be decided before the time the first
// one wrote). It only guides planStreamWrite; a wrong estimate makes the
// read-free write miss (its WHERE clause checks the comparisons on the
// real clock), never decide wrong.
type dbClock struct {
	offset atomic.Int64 // database minus local, in nanoseconds
	latest atomic.Int64 // the latest reading, in Unix nanoseconds
}

// saw records a clock reading of the database's, taken just now.
func (c *dbClock) saw(db time.Time) {
	c.offset.Store(int64(time.Until(db)))
	for {
		latest := c.latest.Load()
		if db.UnixNano() <= latest || c.latest.CompareAndSwap(latest, db.UnixNano()) {
			return
		}
	}
}

// estimate is the database's clock now, as best known.
func (c *dbClock) estimate() time.Time {
	now := time.Now().Add(time.Duration(c.offset.Load()))
	if latest := time.Unix(0, c.latest.Load()); now.Before(latest) {
		now = latest
	}
	return store.Now(now)
}
