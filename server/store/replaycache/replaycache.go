// Package replaycache answers repeated claims of finished keys from memory.
//
// A completed or rejected record never changes until it expires: every
// later claim with the same digest gets it back unchanged, and one with
// another digest is refused with it. So a server can keep these records in
// process and answer such claims without asking the database, which is
// most of the traffic of a consumer whose messages are redelivered.
//
// Store wraps any store.Store. It caches the terminal records that calls
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
// Everything else goes to the wrapped store unchanged. Records handed out
// from the cache share their byte slices between callers, which must not
// modify them (no caller in dedupd does).
package replaycache

import (
	"bytes"
	"context"
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

// Store is a store.Store that answers claims of finished keys from memory.
type Store struct {
	store.Store
	cache *lru
	ttl   time.Duration
	skew  time.Duration
	now   func() time.Time
}

var _ store.Store = (*Store)(nil)

// New wraps inner. Closing the Store closes inner.
func New(inner store.Store, opts Options) *Store {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.ClockSkew <= 0 {
		opts.ClockSkew = DefaultClockSkew
	}
	return &Store{Store: inner, cache: newLRU(opts.MaxBytes), ttl: opts.TTL, skew: opts.ClockSkew, now: time.Now}
}

// Claim answers a claim of a cached finished key as the store would: the
// record with the same digest, a digest mismatch carrying it otherwise.
func (s *Store) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	if rec, ok := s.cache.get(p.Consumer, p.Key, s.now()); ok {
		if err := ctx.Err(); err != nil {
			return store.ClaimResult{}, err
		}
		if !bytes.Equal(rec.Digest, p.Digest) {
			return store.ClaimResult{}, &store.ConflictError{Err: store.ErrDigestMismatch, Record: rec}
		}
		outcome := store.AlreadyCompleted
		if rec.State == store.Rejected {
			outcome = store.AlreadyRejected
		}
		return store.ClaimResult{Outcome: outcome, Record: rec}, nil
	}
	res, err := s.Store.Claim(ctx, p)
	if err == nil {
		s.remember(res.Record)
	}
	return res, err
}

// Complete stores a result and caches the completed record.
func (s *Store) Complete(ctx context.Context, p store.CompleteParams) (store.Record, error) {
	rec, err := s.Store.Complete(ctx, p)
	if err == nil {
		s.remember(rec)
	}
	return rec, err
}

// Reject stores a rejection and caches it when it is terminal.
func (s *Store) Reject(ctx context.Context, p store.RejectParams) (store.Record, error) {
	rec, err := s.Store.Reject(ctx, p)
	if err == nil {
		s.remember(rec)
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
	rec, err := s.Store.Lookup(ctx, consumer, key)
	if err == nil {
		s.remember(rec)
	}
	return rec, err
}

// Invalidate forgets a key. Whatever deletes a record through this server
// (DeleteRecord) must call it after the delete has committed.
func (s *Store) Invalidate(consumer, key string) { s.cache.remove(consumer, key) }

// InvalidateAll forgets everything. Whatever deletes records in bulk through
// this server (a purge) must call it after the delete has committed.
func (s *Store) InvalidateAll() { s.cache.clear() }

// Unwrap returns the wrapped store, for callers that need more than
// store.Store from it. Deleting records through it bypasses the cache: call
// Invalidate or InvalidateAll afterwards.
func (s *Store) Unwrap() store.Store { return s.Store }

// Stats reports the cache's hits and misses so far, and its size.
func (s *Store) Stats() Stats { return s.cache.stats() }

// remember caches a finished record for as long as it may be trusted.
func (s *Store) remember(rec store.Record) {
	if rec.State != store.Completed && rec.State != store.Rejected {
		return
	}
	now := s.now()
	life := min(s.ttl, rec.ExpiresAt.Sub(now)-s.skew)
	if life <= 0 {
		return
	}
	s.cache.put(rec, now.Add(life))
}
