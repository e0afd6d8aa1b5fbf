package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

func streamRaceTests() []streamTest {
	return []streamTest{
		{"ClaimsOfOneSequence", testStreamRaceClaims},
		{"CompletionsAgainstTakeovers", testStreamRaceTakeovers},
	}
}

// Many callers claim the same next sequence, round after round: exactly
// one acquires each round and the rest see its lease (or, once it has
// completed, a duplicate).
func testStreamRaceClaims(t *testing.T, s store.StreamStore) {
	const (
		n      = 16
		rounds = 5
	)
	for seq := int64(1); seq <= rounds; seq++ {
		results := make([]store.StreamClaimResult, n)
		errs := make([]error, n)
		concurrently(n, func(i int) {
			p := sclaimP("hot", seq)
			p.Owner = fmt.Sprintf("worker-%d", i)
			results[i], errs[i] = s.ClaimStream(t.Context(), p)
		})
		winner := -1
		for i, res := range results {
			if errs[i] != nil {
				t.Fatalf("round %d claim %d: %v", seq, i, errs[i])
			}
			switch res.Outcome {
			case store.StreamAcquired:
				if winner >= 0 {
					t.Fatalf("round %d: claims %d and %d both acquired", seq, winner, i)
				}
				winner = i
			case store.StreamInProgress:
			default:
				t.Fatalf("round %d claim %d: %v", seq, i, res.Outcome)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: nobody acquired", seq)
		}
		scomplete(t, s, results[winner].Stream)
	}
	if st := getStream(t, s, "hot"); st.HighWater != rounds || st.FencingToken != rounds {
		t.Fatalf("after %d rounds: %+v", rounds, st)
	}
}

// Workers with leases too short for their work race to take each other's
// claims over and complete them, while a watcher reads the stream: the
// mark never moves backwards, no sequence is completed twice, and the
// completed sequences are exactly 1..mark.
func testStreamRaceTakeovers(t *testing.T, s store.StreamStore) {
	const (
		workers = 8
		target  = 30
	)
	var (
		mu        sync.Mutex
		completed []int64
		stop      atomic.Bool
		watchErr  error
		watchDone = make(chan struct{})
	)
	go func() {
		defer close(watchDone)
		var last int64
		for !stop.Load() {
			st, err := s.GetStream(t.Context(), consumer, "contended")
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				watchErr = err
				return
			}
			if st.HighWater < last {
				watchErr = fmt.Errorf("mark went back from %d to %d", last, st.HighWater)
				return
			}
			last = st.HighWater
		}
	}()
	concurrently(workers, func(w int) {
		for {
			next := int64(1)
			if st, err := s.GetStream(t.Context(), consumer, "contended"); err == nil {
				next = st.HighWater + 1
			}
			if next > target {
				return
			}
			p := sclaimP("contended", next)
			p.Owner, p.LeaseTTL = fmt.Sprintf("w-%d", w), shortTTL/30 // often runs out mid-work
			res, err := s.ClaimStream(t.Context(), p)
			if errors.Is(err, store.ErrSequenceGap) {
				continue // the mark moved since we read it
			}
			if err != nil {
				t.Errorf("worker %d claim %d: %v", w, next, err)
				return
			}
			if res.Outcome != store.StreamAcquired {
				continue
			}
			_, err = s.CompleteStream(t.Context(), scompleteP(res.Stream))
			switch {
			case err == nil:
				mu.Lock()
				completed = append(completed, next)
				mu.Unlock()
			case !errors.Is(err, store.ErrLeaseLost):
				t.Errorf("worker %d complete %d: %v", w, next, err)
				return
			}
		}
	})
	stop.Store(true)
	<-watchDone
	if watchErr != nil {
		t.Fatal(watchErr)
	}
	slices.Sort(completed)
	for i, seq := range completed {
		if seq != int64(i+1) {
			t.Fatalf("completed %v: want each of 1..%d exactly once", completed, target)
		}
	}
	if st := getStream(t, s, "contended"); st.HighWater != target || len(completed) != target {
		t.Fatalf("mark %d after %d completions, want %d", st.HighWater, len(completed), target)
	}
}
