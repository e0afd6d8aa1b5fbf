package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// (h) Many callers doing different things at once, the traffic a store that
// groups concurrent writes into one statement or transaction sees in every
// group: the same key claimed many times (with the same digest and a
// different one), fresh keys claimed and completed, replays of a completed
// key, and callers who gave up before calling. Each caller's answer must be
// one it could have got alone: one acquisition per shared key, a digest
// mismatch always refused, every replay the stored result, and nothing
// written for a caller whose context was already done.
func testRaceMixedCallers(t *testing.T, s store.Store) {
	const (
		callers = 32
		rounds  = 6
		shared  = 3
	)
	done := acquire(t, s, claimP("replayed"))
	complete(t, s, completeP(done, []byte("stored")))
	gone, cancel := context.WithCancel(context.Background())
	cancel()

	var acquired [shared][2]atomic.Int32
	concurrently(callers, func(c int) {
		for r := range rounds {
			fresh := fmt.Sprintf("fresh-%d-%d", c, r)
			switch (c + r) % 5 {
			case 0, 1:
				// Digest 0 or 1: whichever claim lands first binds the key.
				d, key := (c+r)%5, (c+r)%shared
				p := claimP(fmt.Sprintf("shared-%d", key))
				p.Digest = [][]byte{digest1, digest2}[d]
				res, err := s.Claim(t.Context(), p)
				switch {
				case err == nil && res.Outcome == store.Acquired:
					acquired[key][d].Add(1)
				case errors.Is(err, store.ErrDigestMismatch):
				case err != nil || res.Outcome != store.InProgress:
					t.Errorf("claim of a shared key: %v, %v", res.Outcome, err)
				}
			case 2:
				res, err := s.Claim(t.Context(), claimP(fresh))
				if err == nil && res.Outcome == store.Acquired {
					_, err = s.Complete(t.Context(), completeP(res.Record, []byte(fresh)))
				}
				if err != nil || res.Outcome != store.Acquired {
					t.Errorf("claim and complete of %s: %v, %v", fresh, res.Outcome, err)
				}
			case 3:
				res, err := s.Claim(t.Context(), claimP("replayed"))
				if err != nil || res.Outcome != store.AlreadyCompleted || !bytes.Equal(res.Record.Result, []byte("stored")) {
					t.Errorf("replay: %v %q, %v", res.Outcome, res.Record.Result, err)
				}
			case 4:
				if _, err := s.Claim(gone, claimP("gone-"+fresh)); !errors.Is(err, context.Canceled) {
					t.Errorf("claim with a cancelled context: %v, want context.Canceled", err)
				}
			}
		}
	})
	checkMixedCallers(t, s, acquired[:], callers, rounds)
}

// checkMixedCallers checks what testRaceMixedCallers left stored.
func checkMixedCallers(t *testing.T, s store.Store, acquired [][2]atomic.Int32, callers, rounds int) {
	t.Helper()
	for i := range acquired {
		// The digest stored is the winner's: it acquired once, the other
		// digest never.
		key := fmt.Sprintf("shared-%d", i)
		rec := lookup(t, s, consumer, key)
		won := 0
		if bytes.Equal(rec.Digest, digest2) {
			won = 1
		}
		if a, b := acquired[i][won].Load(), acquired[i][1-won].Load(); a != 1 || b != 0 {
			t.Errorf("%s (digest %q): the stored digest acquired %d times, the other %d; want 1 and 0", key, rec.Digest, a, b)
		}
	}
	for c := range callers {
		for r := range rounds {
			fresh := fmt.Sprintf("fresh-%d-%d", c, r)
			switch (c + r) % 5 {
			case 2:
				if rec := lookup(t, s, consumer, fresh); rec.State != store.Completed || string(rec.Result) != fresh {
					t.Errorf("%s: state %s result %q, want completed with its own result", fresh, rec.State, rec.Result)
				}
			case 4:
				if _, err := s.Lookup(t.Context(), consumer, "gone-"+fresh); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("gone-%s was written for a caller who gave up: Lookup = %v", fresh, err)
				}
			}
		}
	}
}
