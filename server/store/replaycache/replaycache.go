// Package replaycache answers repeated claims of finished keys from memory.
//
// A completed or rejected record never changes until it expires: every
// later claim with the same digest gets it back unchanged, and one with
// another digest is refused with it. So a server can keep these records in
// process and answer such claims without asking the database, which is
// most of the traffic of a consumer whose messages are redelivered.
//
// Store wraps any store.Backend. It caches the terminal records that calls
// return, bounded by bytes (least recently used first out), and answers
// claims and lookups from them while they are fresh:
//
//   - An entry lives at most Options.TTL. That bounds how long a record
//     deleted by another server sharing the database (an operator's
//     DeleteRecord or a purge there) can still be answered here. Deletes
//     made through this server invalidate its entries at once.
//   - An entry is never used past the record's ExpiresAt. ExpiresAt is on
//     the store's clock, so the entry is dropped Options.ClockSkew earlier
//     than this server's clock says, and a record that close to expiry is
//     not cached at all.
//
// Everything else, streams included, goes to the wrapped store unchanged
// (see passthrough.go for why streams are not cached). Records handed out
// from the cache share their byte slices between callers, which must not
// modify them (no caller in dedupd does).
package replaycache

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// Defaults for the zero Options fields.
const (
	DefaultTTL       = 10 * time.Second
	DefaultClockSkew = 5 * time.Second
)

// Options bound the cache.
type Options struct {
	// MaxBytes bounds the memory the entries account for.
	MaxBytes int64
	// TTL is the longest an entry is trusted: the staleness bound for
	// deletes made on other servers. Zero means DefaultTTL.
	TTL time.Duration
	// ClockSkew is how far this server's clock may be from the store's.
	// Zero means DefaultClockSkew.
	ClockSkew time.Duration
}

// Store is a store.Engine that answers claims of finished keys from
// memory. It writes out the three write methods and the reads it answers
// or invalidates on; the other reads (store.Reader, Upkeep and Reports)
// pass through embedded, as none of them can make a cached record wrong:
// Reap removes only records past the ExpiresAt the cache already stops at
// (and streams, which it does not hold), and the rest only read records or touch policies. Its test
// holds that every Engine method and command is decided here.
type Store struct {
	store.Reader
	store.Upkeep
	store.Reports
	inner store.Engine
	cache *lru
	// deletions counts the invalidations so far. A record read from the
	// store is cached only if no invalidation happened since the read began,
	// so that a read racing a delete cannot put the deleted record back.
	deletions atomic.Uint64
	ttl       time.Duration
	skew      time.Duration
	now       func() time.Time
}

var _ store.Engine = (*Store)(nil)

// New wraps inner. Closing the Store closes inner.
func New(inner store.Engine, opts Options) *Store {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.ClockSkew <= 0 {
		opts.ClockSkew = DefaultClockSkew
	}
	return &Store{Reader: inner, Upkeep: inner, Reports: inner, inner: inner,
		cache: newLRU(opts.MaxBytes), ttl: opts.TTL, skew: opts.ClockSkew, now: time.Now}
}

// Apply answers a claim of a cached finished key as the store would, and
// caches the finished records the store returns. A DeleteRecord forgets
// its key here once the store has run it (even on error: the delete may
// have landed), so that this server's next claim runs the work again.
func (s *Store) Apply(ctx context.Context, cmd store.Command) (store.Decision, error) {
	switch c := cmd.(type) {
	case store.ClaimParams:
		if rec, ok := s.cache.get(c.Consumer, c.Key, s.now()); ok {
			if d, answered, err := s.replay(ctx, rec, cmd); answered {
				return d, err
			}
		}
	case store.DeleteRecordParams:
		d, err := s.inner.Apply(ctx, cmd)
		s.Invalidate(c.Consumer, c.Key)
		return d, err
	}
	since := s.deletions.Load()
	d, err := s.inner.Apply(ctx, cmd)
	if err == nil {
		s.remember(d.Record, since)
	}
	return d, err
}

// replay answers a claim (already a Command, so that it is not boxed
// again) of a cached finished record through store.Apply,
// as the store would: the record with the same digest, a digest mismatch
// carrying it otherwise. answered is false when Apply would write (never
// for a record the cache still trusts), and then the store must decide.
func (s *Store) replay(ctx context.Context, rec store.Record, claim store.Command) (_ store.Decision, answered bool, _ error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, true, err
	}
	d, err := store.Apply(&rec, claim, s.now())
	if err == nil && d.Write {
		return store.Decision{}, false, nil
	}
	return d, true, err
}

// ApplyStream goes to the wrapped store: streams are not cached. Only a
// DUPLICATE (a sequence at or below the high-water mark) could be
// answered from memory, and not faithfully: a claim's answer carries the
// stream as it is now, and unlike a finished key's record the stream row
// changes with every event (mark, in-flight sequence, fencing token,
// expiry), so a cached answer would show a stream that has since moved
// on. Keeping the entry current would mean repeating ApplyStream's rules
// here on every write, and ResetStream may lower the mark on any server
// sharing the database, after which a cached DUPLICATE would skip events
// that must run again. A stream claim is one row's compare-and-set that
// mostly acquires the next sequence, so there is little to win.
func (s *Store) ApplyStream(ctx context.Context, cmd store.StreamCommand) (store.StreamDecision, error) {
	return s.inner.ApplyStream(ctx, cmd)
}

// Purge deletes a batch in the store, then forgets every cached record:
// which keys went is not known here, and purges are rare. A count deletes
// nothing, so it leaves the cache as it is.
func (s *Store) Purge(ctx context.Context, p store.PurgeParams) (int64, error) {
	n, err := s.inner.Purge(ctx, p)
	if !p.CountOnly && (n > 0 || err != nil) {
		s.InvalidateAll()
	}
	return n, err
}

// Invalidate forgets a key. Whatever deletes a record through this server
// must call it after the delete has committed.
func (s *Store) Invalidate(consumer, key string) {
	s.deletions.Add(1)
	s.cache.remove(consumer, key)
}

// InvalidateAll forgets everything. Whatever deletes records in bulk through
// this server must call it after the delete has committed.
func (s *Store) InvalidateAll() {
	s.deletions.Add(1)
	s.cache.clear()
}

// CacheStats reports the cache's hits and misses so far, and its size.
func (s *Store) CacheStats() Stats { return s.cache.stats() }

// remember caches a finished record, read when the deletion count was
// since, for as long as it may be trusted.
func (s *Store) remember(rec store.Record, since uint64) {
	if rec.State != store.Completed && rec.State != store.Rejected {
		return
	}
	now := s.now()
	life := min(s.ttl, rec.ExpiresAt.Sub(now)-s.skew)
	if life <= 0 || s.deletions.Load() != since {
		return
	}
	s.cache.put(rec, now.Add(life))
	// An invalidation between the check and the put has already removed
	// what it could; take back what the put added after it.
	if s.deletions.Load() != since {
		s.cache.remove(rec.Consumer, rec.Key)
	}
}
