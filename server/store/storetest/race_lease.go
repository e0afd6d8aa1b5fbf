package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// holding is one acquisition seen by a worker in testRaceLeaseHandoff.
type holding struct {
	lease store.Record // the record the claim returned
	// released: the holder's retryable Reject succeeded, so it gave the key
	// up itself; otherwise someone took the key over after the lease ran out.
	released bool
}

// (b) Workers claim one key over and over with a very short lease. A worker
// that acquires it either gives it back at once with a retryable Reject or,
// every third time, stalls past its lease first, inviting a takeover. The
// store must hand the key from holder to holder with one token per
// acquisition, in order, and never let two leases overlap.
func testRaceLeaseHandoff(t *testing.T, s store.Store) {
	const (
		workers = 8
		target  = 30 // acquisitions to reach before stopping
		lease   = 20 * time.Millisecond
	)
	var (
		mu    sync.Mutex
		held  []holding
		count atomic.Int64
	)
	// No deadline: the lease runs out whatever the machine's load, so the
	// key keeps changing hands until the target, and go test's -timeout
	// ends a store that stops handing it on.
	concurrently(workers, func(w int) {
		p := claimP("handoff")
		p.LeaseTTL, p.Owner = lease, fmt.Sprintf("worker-%d", w)
		var last int64 // tokens this worker sees never go back
		for count.Load() < target {
			res, err := s.Claim(t.Context(), p)
			if err != nil {
				t.Errorf("worker %d: Claim: %v", w, err)
				return
			}
			if tok := res.Record.FencingToken; tok < last {
				t.Errorf("worker %d saw token %d after %d", w, tok, last)
			} else {
				last = tok
			}
			switch res.Outcome {
			case store.Acquired:
				h := hold(t, s, res.Record, count.Add(1)%3 == 0, lease)
				mu.Lock()
				held = append(held, h)
				mu.Unlock()
			case store.InProgress:
				if res.RetryAfter <= 0 || res.RetryAfter > lease {
					t.Errorf("worker %d: RetryAfter %v, want within (0, %v]", w, res.RetryAfter, lease)
				}
				time.Sleep(min(res.RetryAfter, lease/4))
			default:
				t.Errorf("worker %d: outcome %v", w, res.Outcome)
				return
			}
		}
	})
	checkHandoffs(t, s, held)
}

// hold plays a holder: optionally stall past the lease, then give the key
// back. Losing the key to a takeover in the meantime is allowed, but only
// to a later token.
func hold(t *testing.T, s store.Store, r store.Record, stall bool, lease time.Duration) holding {
	if stall {
		time.Sleep(lease + lease/2)
	}
	_, err := s.Reject(t.Context(), rejectP(r, retryable()))
	switch {
	case err == nil:
		return holding{lease: r, released: true}
	case errors.Is(err, store.ErrLeaseLost):
		if tok := errTokenFromConflict(err); tok <= r.FencingToken {
			t.Errorf("token %d lost its lease to token %d, want a later token", r.FencingToken, tok)
		}
	default:
		t.Errorf("token %d: Reject: %v", r.FencingToken, err)
	}
	return holding{lease: r}
}

// checkHandoffs checks the acquisitions of testRaceLeaseHandoff as a whole.
func checkHandoffs(t *testing.T, s store.Store, held []holding) {
	t.Helper()
	slices.SortFunc(held, func(a, b holding) int { return int(a.lease.FencingToken - b.lease.FencingToken) })
	// Tokens 1…n with no gap or repeat: one token per acquisition, so the
	// token order is the commit order. The record never expires here, so
	// attempts count acquisitions too.
	for i, h := range held {
		if h.lease.FencingToken != int64(i+1) || h.lease.Attempts != int64(i+1) {
			t.Fatalf("acquisition %d of %d: token %d attempts %d, want %d, %d (duplicate or lost token)",
				i+1, len(held), h.lease.FencingToken, h.lease.Attempts, i+1, i+1)
		}
	}
	// A holder that did not release was taken over: that must have happened
	// on the store's clock no earlier than its lease ran out.
	for i := 1; i < len(held); i++ {
		prev, next := held[i-1], held[i]
		if !prev.released && next.lease.UpdatedAt.Before(prev.lease.LeaseExpiresAt) {
			t.Errorf("token %d acquired at %v while token %d held a lease until %v",
				next.lease.FencingToken, next.lease.UpdatedAt, prev.lease.FencingToken, prev.lease.LeaseExpiresAt)
		}
	}
	var takeovers int
	for _, h := range held[:max(len(held)-1, 0)] {
		if !h.released {
			takeovers++
		}
	}
	t.Logf("%d acquisitions, %d of them takeovers after a lease ran out", len(held), takeovers)
	final := lookup(t, s, consumer, "handoff")
	if n := int64(len(held)); final.FencingToken != n || final.Attempts != n {
		t.Errorf("final record: token %d attempts %d, want %d acquisitions", final.FencingToken, final.Attempts, n)
	}
}

// (f) The reaper runs while keys are written: live keys, and expired keys
// being claimed anew. Whichever way each race goes, no live record may be
// deleted: a reaper that checks expiry and deletes in two steps would delete
// a record that a claim revived in between.
func testRaceDeleteExpiredDuringWrites(t *testing.T, s store.Store) {
	const (
		workers       = 8 // half on live keys, half reviving expired ones
		keysPerWorker = 6
	)
	expired := makeExpired(t, s, "old-", workers/2*keysPerWorker)
	stop := make(chan struct{})
	var deleted atomic.Int64
	var reaper sync.WaitGroup
	reaper.Go(func() { reap(t, s, stop, &deleted) })

	final := make([][]store.Record, workers)
	concurrently(workers, func(w int) {
		for j := range keysPerWorker {
			key := fmt.Sprintf("live-%d-%d", w, j)
			if w%2 == 1 {
				key = expired[w/2*keysPerWorker+j].Key
			}
			if r, ok := claimAndComplete(t, s, key); ok {
				final[w] = append(final[w], r)
			}
		}
	})
	close(stop)
	reaper.Wait()

	if n := deleted.Load(); n > int64(len(expired)) {
		t.Errorf("reaper deleted %d records, but only %d had expired", n, len(expired))
	}
	if n, err := s.DeleteExpired(t.Context(), 1000); n != 0 || err != nil {
		t.Errorf("final DeleteExpired = %d, %v; want 0, nil: every key is live again", n, err)
	}
	for _, recs := range final {
		for _, r := range recs {
			wantUnchanged(t, s, r)
		}
	}
}

// reap calls DeleteExpired in small batches until stop is closed.
func reap(t *testing.T, s store.Store, stop <-chan struct{}, deleted *atomic.Int64) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		n, err := s.DeleteExpired(t.Context(), 3)
		if err != nil {
			t.Errorf("DeleteExpired: %v", err)
			return
		}
		deleted.Add(int64(n))
		if n == 0 {
			time.Sleep(time.Millisecond)
		}
	}
}

// claimAndComplete acquires key with a long lease and completes it; it
// reports failures with t.Errorf, so it can run in a goroutine.
func claimAndComplete(t *testing.T, s store.Store, key string) (store.Record, bool) {
	p := claimP(key)
	p.Digest = digest2 // an expired key accepts a new digest
	res, err := s.Claim(t.Context(), p)
	if err != nil || res.Outcome != store.Acquired || res.Record.Attempts != 1 {
		t.Errorf("Claim(%q) = %v attempt %d, %v; want a fresh ACQUIRED", key, res.Outcome, res.Record.Attempts, err)
		return store.Record{}, false
	}
	r, err := s.Complete(t.Context(), completeP(res.Record, []byte(key)))
	if err != nil {
		t.Errorf("Complete(%q): %v", key, err)
		return store.Record{}, false
	}
	return r, true
}
