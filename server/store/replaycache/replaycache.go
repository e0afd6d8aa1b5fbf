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
// Claim and Lookup from them while they are fresh:
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
	"bytes"
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

// Store is a store.Backend that answers claims of finished keys from
// memory. It implements every method itself, without embedding the
// wrapped store, so that a method added to store.Backend must be decided
// here before the server compiles.
type Store struct {
	inner store.Backend
	cache *lru
	// deletions counts the invalidations so far. A record read from the
	// store is cached only if no invalidation happened since the read began,
	// so that a read racing a delete cannot put the deleted record back.
	deletions atomic.Uint64
	ttl       time.Duration
	skew      time.Duration
	now       func() time.Time
}

var _ store.Backend = (*Store)(nil)

// New wraps inner. Closing the Store closes inner.
func New(inner store.Backend, opts Options) *Store {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.ClockSkew <= 0 {
		opts.ClockSkew = DefaultClockSkew
	}
	return &Store{inner: inner, cache: newLRU(opts.MaxBytes), ttl: opts.TTL, skew: opts.ClockSkew, now: time.Now}
}

// Claim answers a claim of a cached finished key as the store would: the
// record with the same digest, a digest mismatch carrying it otherwise.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	if rec, ok := s.cache.get(p.Consumer, p.Key, s.now()); ok {
		d, err := s.replay(ctx, rec, p)
		return store.ClaimResult{Outcome: d.Outcome, Record: d.Record}, err
	}
	since := s.deletions.Load()
	res, err := s.inner.Claim(ctx, p)
	if err == nil {
		s.remember(res.Record, since)
	}
	return res, err
}

// replay answers a claim of a cached finished record as the store would:
// the record with the same digest, a digest mismatch carrying it otherwise.
func (s *Store) replay(ctx context.Context, rec store.Record, p store.ClaimParams) (store.Decision, error) {
	if err := ctx.Err(); err != nil {
		return store.Decision{}, err
	}
	if !bytes.Equal(rec.Digest, p.Digest) {
		return store.Decision{}, &store.ConflictError{Err: store.ErrDigestMismatch, Record: rec}
	}
	outcome := store.AlreadyCompleted
	if rec.State == store.Rejected {
		outcome = store.AlreadyRejected
	}
	return store.Decision{Outcome: outcome, Record: rec}, nil
}

// Complete stores a result and caches the completed record.
func (s *Store) Complete(ctx context.Context, p store.CompleteParams) (store.Record, error) {
	since := s.deletions.Load()
	rec, err := s.inner.Complete(ctx, p)
	if err == nil {
		s.remember(rec, since)
	}
	return rec, err
}

// Reject stores a rejection and caches it when it is terminal.
func (s *Store) Reject(ctx context.Context, p store.RejectParams) (store.Record, error) {
	since := s.deletions.Load()
	rec, err := s.inner.Reject(ctx, p)
	if err == nil {
		s.remember(rec, since)
	}
	return rec, err
}

// Lookup answers from the cache for finished keys.
func (s *Store) Lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	if rec, ok := s.cache.get(consumer, key, s.now()); ok {
		if err := ctx.Err(); err != nil {
			return store.Record{}, err
		}
		return rec, nil
	}
	since := s.deletions.Load()
	rec, err := s.inner.Lookup(ctx, consumer, key)
	if err == nil {
		s.remember(rec, since)
	}
	return rec, err
}

// DeleteRecord deletes the record in the store, then forgets it here, so
// that this server's next claim of the key runs the work again.
func (s *Store) DeleteRecord(ctx context.Context, consumer, key string) (store.Record, error) {
	rec, err := s.inner.DeleteRecord(ctx, consumer, key)
	s.Invalidate(consumer, key) // even on error: the delete may have landed
	return rec, err
}

// PurgeBatch deletes a batch in the store, then forgets every cached record:
// which keys went is not known here, and purges are rare.
func (s *Store) PurgeBatch(ctx context.Context, p store.PurgeParams) (int, error) {
	n, err := s.inner.PurgeBatch(ctx, p)
	if n > 0 || err != nil {
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

// Unwrap returns the wrapped store. Deleting records through it bypasses
// the cache: call Invalidate or InvalidateAll afterwards.
func (s *Store) Unwrap() store.Backend { return s.inner }

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
