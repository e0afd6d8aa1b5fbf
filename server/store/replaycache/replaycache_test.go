package replaycache_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/replaycache"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// counting counts the reads that reach the wrapped store.
type counting struct {
	store.Backend
	claims, lookups atomic.Int64
}

func (c *counting) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	c.claims.Add(1)
	return c.Backend.Claim(ctx, p)
}

func (c *counting) Lookup(ctx context.Context, consumer, key string) (store.Record, error) {
	c.lookups.Add(1)
	return c.Backend.Lookup(ctx, consumer, key)
}

var policy = store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}

// clock is a settable clock for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.t = c.t.Add(d) }
func newClock() *clock               { return &clock{t: time.Now()} }
func claimP(key string) store.ClaimParams {
	return store.ClaimParams{Consumer: "c", Key: key, Digest: []byte("d"), Owner: "w", Policy: policy}
}

// cachedStore is the cache as handlers see it (the typed API over it),
// with the cache's own controls.
type cachedStore struct {
	*store.API
	cache *replaycache.Store
}

func cached(c *replaycache.Store) cachedStore { return cachedStore{store.NewAPI(c), c} }

func (c cachedStore) CacheStats() replaycache.Stats   { return c.cache.CacheStats() }
func (c cachedStore) Invalidate(consumer, key string) { c.cache.Invalidate(consumer, key) }
func (c cachedStore) InvalidateAll()                  { c.cache.InvalidateAll() }

func newCached(t testing.TB, opts replaycache.Options) (cachedStore, *counting, *clock) {
	t.Helper()
	inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Backend: inner}
	s := replaycache.New(storetest.AsEngine(c), opts)
	t.Cleanup(func() { s.Close() })
	clk := newClock()
	replaycache.SetClock(s, clk.now)
	return cached(s), c, clk
}

// finish claims key and completes it, or rejects it terminally.
func finish(t testing.TB, s store.Store, key string, reject bool) store.Record {
	t.Helper()
	ctx := context.Background()
	res, err := s.Claim(ctx, claimP(key))
	if err != nil {
		t.Fatal(err)
	}
	var rec store.Record
	if reject {
		rec, err = s.Reject(ctx, store.RejectParams{Consumer: "c", Key: key, FencingToken: res.Record.FencingToken,
			Rejection: store.Rejection{Reason: "NO"}, Policy: policy})
	} else {
		rec, err = s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: key, FencingToken: res.Record.FencingToken,
			Result: []byte("result"), Policy: policy})
	}
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// Claims of finished keys are answered from memory with exactly what the
// store holds: the outcome, the record, and for another digest the
// mismatch carrying the stored record.
func TestClaimsOfFinishedKeysAreAnsweredFromMemory(t *testing.T) {
	s, inner, _ := newCached(t, replaycache.Options{MaxBytes: 1 << 20})
	ctx := context.Background()
	for _, tc := range []struct {
		key     string
		reject  bool
		outcome store.Outcome
	}{{"done", false, store.AlreadyCompleted}, {"refused", true, store.AlreadyRejected}} {
		stored := finish(t, s, tc.key, tc.reject)
		before := inner.claims.Load()
		for range 5 {
			res, err := s.Claim(ctx, claimP(tc.key))
			if err != nil || res.Outcome != tc.outcome || !reflect.DeepEqual(res.Record, stored) {
				t.Errorf("%s: claim = %v %+v, %v; want %v with the stored record", tc.key, res.Outcome, res.Record, err, tc.outcome)
			}
		}
		other := claimP(tc.key)
		other.Digest = []byte("other")
		_, err := s.Claim(ctx, other)
		var conflict *store.ConflictError
		if !errors.Is(err, store.ErrDigestMismatch) || !errors.As(err, &conflict) || !reflect.DeepEqual(conflict.Record, stored) {
			t.Errorf("%s: claim with another digest = %v, want a digest mismatch with the stored record", tc.key, err)
		}
		if n := inner.claims.Load() - before; n != 0 {
			t.Errorf("%s: %d claims reached the store, want 0", tc.key, n)
		}
		// The store itself agrees with what the cache answered.
		if _, err := inner.Backend.Claim(ctx, other); !errors.Is(err, store.ErrDigestMismatch) {
			t.Errorf("%s: the store answers the other digest with %v", tc.key, err)
		}
		if rec, err := s.Lookup(ctx, "c", tc.key); err != nil || !reflect.DeepEqual(rec, stored) || inner.lookups.Load() != 0 {
			t.Errorf("%s: Lookup = %+v, %v after %d store lookups", tc.key, rec, err, inner.lookups.Load())
		}
	}
	if st := s.CacheStats(); st.Hits < 12 || st.Entries != 2 {
		t.Errorf("stats %+v, want at least 12 hits and 2 entries", st)
	}
}

// Pending and released keys are never answered from memory: they change.
func TestUnfinishedKeysAlwaysReachTheStore(t *testing.T) {
	s, inner, _ := newCached(t, replaycache.Options{MaxBytes: 1 << 20})
	ctx := context.Background()
	res, err := s.Claim(ctx, claimP("pending"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reject(ctx, store.RejectParams{Consumer: "c", Key: "pending", FencingToken: res.Record.FencingToken,
		Rejection: store.Rejection{Reason: "BUSY", Retryable: true}, Policy: policy}); err != nil {
		t.Fatal(err)
	}
	before := inner.claims.Load()
	res, err = s.Claim(ctx, claimP("pending"))
	if err != nil || res.Outcome != store.Acquired || res.Record.FencingToken != 2 {
		t.Errorf("claim of a released key: %v token %d, %v; want ACQUIRED token 2", res.Outcome, res.Record.FencingToken, err)
	}
	if inner.claims.Load() != before+1 {
		t.Errorf("the claim of a released key did not reach the store")
	}
	if st := s.CacheStats(); st.Entries != 0 {
		t.Errorf("unfinished records cached: %+v", st)
	}
}

// An entry is trusted for TTL at most, never within ClockSkew of the
// record's expiry, and not after Invalidate.
func TestEntriesAreTrustedWithinTheirBounds(t *testing.T) {
	ctx := context.Background()
	miss := func(t *testing.T, s store.Store, inner *counting, key string) bool {
		t.Helper()
		before := inner.claims.Load()
		if _, err := s.Claim(ctx, claimP(key)); err != nil {
			t.Fatal(err)
		}
		return inner.claims.Load() > before
	}
	t.Run("TTL", func(t *testing.T) {
		s, inner, clk := newCached(t, replaycache.Options{MaxBytes: 1 << 20, TTL: time.Minute})
		finish(t, s, "k", false)
		clk.add(time.Minute - time.Millisecond)
		if miss(t, s, inner, "k") {
			t.Error("entry not used within its TTL")
		}
		clk.add(time.Millisecond)
		if !miss(t, s, inner, "k") {
			t.Error("entry used at the end of its TTL")
		}
	})
	t.Run("Expiry", func(t *testing.T) {
		// Records kept an hour: trusted up to an hour minus the skew.
		s, inner, clk := newCached(t, replaycache.Options{MaxBytes: 1 << 20, TTL: 2 * time.Hour, ClockSkew: time.Minute})
		finish(t, s, "k", false)
		clk.add(58 * time.Minute)
		if miss(t, s, inner, "k") {
			t.Error("entry not used well before the record expires")
		}
		clk.add(time.Minute + time.Second)
		if !miss(t, s, inner, "k") {
			t.Error("entry used within the clock skew of the record's expiry")
		}
	})
	t.Run("Invalidate", func(t *testing.T) {
		s, inner, _ := newCached(t, replaycache.Options{MaxBytes: 1 << 20})
		finish(t, s, "a", false)
		finish(t, s, "b", false)
		s.Invalidate("c", "a")
		if !miss(t, s, inner, "a") || miss(t, s, inner, "b") {
			t.Error("Invalidate did not forget exactly its key")
		}
		s.InvalidateAll()
		if !miss(t, s, inner, "b") {
			t.Error("InvalidateAll left an entry")
		}
	})
}

// The entries never account for more than MaxBytes; the least recently
// used go first.
func TestBytesAreBounded(t *testing.T) {
	const maxBytes = 16 << 10
	s, inner, _ := newCached(t, replaycache.Options{MaxBytes: maxBytes})
	for i := range 400 {
		finish(t, s, fmt.Sprintf("key-%03d", i), false)
		if st := s.CacheStats(); st.Bytes > maxBytes {
			t.Fatalf("after %d records the cache holds %d bytes, over %d", i+1, st.Bytes, maxBytes)
		}
	}
	st := s.CacheStats()
	if st.Entries == 0 || st.Entries >= 400 {
		t.Errorf("%d entries after 400 records in %d bytes", st.Entries, maxBytes)
	}
	before := inner.claims.Load()
	if _, err := s.Claim(context.Background(), claimP("key-000")); err != nil {
		t.Fatal(err)
	}
	if inner.claims.Load() == before {
		t.Error("the oldest entry survived")
	}
}

// Concurrent replays, mismatches and invalidations of one key all get the
// stored answer.
func TestRaceReplaysAndInvalidations(t *testing.T) {
	s, _, _ := newCached(t, replaycache.Options{MaxBytes: 1 << 20})
	stored := finish(t, s, "hot", false)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			for j := range 50 {
				p := claimP("hot")
				if i%4 == 0 {
					p.Digest = []byte("other")
				}
				res, err := s.Claim(context.Background(), p)
				switch {
				case i%4 == 0:
					if !errors.Is(err, store.ErrDigestMismatch) {
						t.Errorf("mismatch: %v", err)
					}
				case err != nil || res.Outcome != store.AlreadyCompleted || !reflect.DeepEqual(res.Record, stored):
					t.Errorf("replay: %v %v", res.Outcome, err)
				}
				if i == 1 && j%5 == 0 {
					s.Invalidate("c", "hot")
				}
			}
		})
	}
	wg.Wait()
}

// gated holds each Claim after the wrapped store has answered it, until
// the test lets it go: the moment a replay has read a record the cache is
// about to remember.
type gated struct {
	store.Backend
	read, release chan struct{}
}

func (g *gated) Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error) {
	res, err := g.Backend.Claim(ctx, p)
	g.read <- struct{}{}
	<-g.release
	return res, err
}

// A record deleted through this server is never replayed after the delete
// returns, even by a claim that read it from the store just before the
// delete and returns just after: that claim must not put it back.
func TestDeleteRacingAReadIsNotUndone(t *testing.T) {
	for _, how := range []string{"DeleteRecord", "PurgeBatch"} {
		t.Run(how, func(t *testing.T) {
			inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			g := &gated{Backend: inner, read: make(chan struct{}), release: make(chan struct{})}
			s := cached(replaycache.New(storetest.AsEngine(g), replaycache.Options{MaxBytes: 1 << 20}))
			t.Cleanup(func() { s.Close() })
			ctx := context.Background()
			go func() { // finish the key; its claim passes the gate
				<-g.read
				g.release <- struct{}{}
			}()
			finish(t, s, "k", false)
			s.InvalidateAll() // so the next claim reads the store

			replayed := make(chan store.ClaimResult)
			go func() {
				res, _ := s.Claim(ctx, claimP("k"))
				replayed <- res
			}()
			<-g.read // the replay has read the completed record
			if how == "DeleteRecord" {
				_, err = s.DeleteRecord(ctx, "c", "k")
			} else {
				_, err = s.PurgeBatch(ctx, store.PurgeParams{Consumer: "c", Limit: 10})
			}
			if err != nil {
				t.Fatal(err)
			}
			g.release <- struct{}{}
			if res := <-replayed; res.Outcome != store.AlreadyCompleted {
				t.Fatalf("the replay that read before the delete got %v", res.Outcome)
			}

			go func() { <-g.read; g.release <- struct{}{} }()
			res, err := s.Claim(ctx, claimP("k"))
			if err != nil || res.Outcome != store.Acquired {
				t.Fatalf("claim after the %s: %v, %v; want ACQUIRED (the deleted completion came back)", how, res.Outcome, err)
			}
		})
	}
}

// Every Engine method and command is decided here: cached, invalidated on,
// or passed through on purpose.
func TestEveryEngineMethodIsDecided(t *testing.T) {
	storetest.EngineMethodsDecided(t, map[string]string{
		"Apply": "claims answered, finished records cached, deletes invalidate", "ApplyBatch": "as Apply",
		"ApplyStream": "streams are not cached", "LookupBatch": "answered from the cache",
		"Purge":       "a batch invalidates everything, a count nothing",
		"ListRecords": "Reader: reads", "ReadStream": "Reader: reads", "ListStreams": "Reader: reads",
		"ListParked": "Reader: reads", "ListOpenGaps": "Reader: reads",
		"ParkedTotals": "Reader: reads", "Reap": "Upkeep: only what the cache no longer trusts",
		"Ping": "Upkeep", "Close": "Upkeep",
		"StatsOf": "Reports: reads", "Leases": "Reports: reads",
		"PutPolicyOf": "Reports: policies", "GetPolicyOf": "Reports: policies", "DeletePolicyOf": "Reports: policies",
		"ListPolicies": "Reports: policies",
	})
	storetest.CommandsDecided(t, func(cmd any) bool {
		switch cmd.(type) {
		case store.ClaimParams, store.DeleteRecordParams: // answered; invalidates
			return true
		case store.CompleteParams, store.RejectParams, store.ExtendLeaseParams: // cached when finished
			return true
		case store.StreamCommand: // streams are not cached
			return true
		}
		return false
	})
}

// TestPurgeInvalidatesOnlyWhenItDeletes: the one engine Purge serves both
// typed calls; a dry run (CountPurge) deletes nothing and leaves the
// cached records, and a batch that deletes forgets them all.
func TestPurgeInvalidatesOnlyWhenItDeletes(t *testing.T) {
	s, _, _ := newCached(t, replaycache.Options{MaxBytes: 1 << 20})
	ctx := context.Background()
	finish(t, s, "a", false)
	finish(t, s, "b", true)
	if st := s.CacheStats(); st.Entries != 2 {
		t.Fatalf("%d entries after two finished keys, want 2", st.Entries)
	}
	if n, err := s.CountPurge(ctx, store.PurgeParams{Consumer: "c"}); n != 2 || err != nil {
		t.Fatalf("CountPurge = %d, %v; want 2, nil", n, err)
	}
	if st := s.CacheStats(); st.Entries != 2 {
		t.Errorf("%d entries after a count, want 2 (a count deletes nothing)", st.Entries)
	}
	if n, err := s.PurgeBatch(ctx, store.PurgeParams{Consumer: "c", Limit: 1}); n != 1 || err != nil {
		t.Fatalf("PurgeBatch = %d, %v; want 1, nil", n, err)
	}
	if st := s.CacheStats(); st.Entries != 0 {
		t.Errorf("%d entries after a batch deleted a record, want 0", st.Entries)
	}
}
