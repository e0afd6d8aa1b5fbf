package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// The race tests start real goroutines together behind a barrier and then
// check, from the results every goroutine collected, that the store behaved
// as if the calls ran one at a time in some order. Goroutine counts stay at
// 32 or fewer so a two-core machine copes; the stores retry contention
// internally, so any error at all fails the test.
//
// Goroutines only record results and report with t.Errorf (never t.Fatal,
// which must run on the test's own goroutine); checks that need the whole
// picture run after they have all finished.

func raceTests() []test {
	return []test{
		{"ClaimsOfOneKey", testRaceClaimsOfOneKey},
		{"CompletesOfOneToken", testRaceCompletesOfOneToken},
		{"CompleteAgainstReject", testRaceCompleteAgainstReject},
		{"CompleteAgainstTakeover", testRaceCompleteAgainstTakeover},
		{"ClaimsOfManyKeys", testRaceClaimsOfManyKeys},
		{"LeaseHandoff", testRaceLeaseHandoff},
		{"DeleteExpiredDuringWrites", testRaceDeleteExpiredDuringWrites},
		{"MixedCallers", testRaceMixedCallers},
	}
}

// concurrently runs fn(0) … fn(n-1) in n goroutines released together, so
// that they really contend, and waits for all of them.
func concurrently(n int, fn func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			fn(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// (a) Of many concurrent claims of a free key exactly one acquires it; the
// rest see that holder's live lease.
func testRaceClaimsOfOneKey(t *testing.T, s store.Store) {
	const n = 32
	results := make([]store.ClaimResult, n)
	errs := make([]error, n)
	concurrently(n, func(i int) {
		p := claimP("contended")
		p.Owner = fmt.Sprintf("worker-%d", i)
		results[i], errs[i] = s.Claim(t.Context(), p)
	})
	winner := -1
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("claim %d: %v", i, errs[i])
		}
		switch res.Outcome {
		case store.Acquired:
			if winner >= 0 {
				t.Fatalf("claims %d and %d both acquired the key", winner, i)
			}
			winner = i
		case store.InProgress:
			if res.RetryAfter <= 0 || res.RetryAfter > longTTL {
				t.Errorf("claim %d: RetryAfter %v, want within (0, %v]", i, res.RetryAfter, longTTL)
			}
		default:
			t.Fatalf("claim %d: outcome %v", i, res.Outcome)
		}
		if res.Record.FencingToken != 1 || res.Record.Attempts != 1 {
			t.Errorf("claim %d saw token %d attempt %d, want 1, 1", i, res.Record.FencingToken, res.Record.Attempts)
		}
	}
	if winner < 0 {
		t.Fatal("no claim acquired the free key")
	}
	// Everyone saw the winner's record, and so does Lookup.
	want := results[winner].Record
	for i, res := range results {
		if d := diffRecord(res.Record, want); d != "" {
			t.Errorf("claim %d saw a record other than the winner's:\n%s", i, d)
		}
	}
	wantUnchanged(t, s, want)
}

// (c) Holders racing to complete one lease with different results (say a
// retry racing the original): exactly one result is stored and the rest
// are told the key already finished, with the winner's record.
func testRaceCompletesOfOneToken(t *testing.T, s store.Store) {
	const n = 16
	held := acquire(t, s, claimP("k"))
	recs := make([]store.Record, n)
	errs := make([]error, n)
	concurrently(n, func(i int) {
		recs[i], errs[i] = s.Complete(t.Context(), completeP(held, fmt.Appendf(nil, "result-%d", i)))
	})
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("completes %d and %d both succeeded", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no Complete succeeded: %v", errs[0])
	}
	stored := lookup(t, s, consumer, "k")
	wantSame(t, "stored record", stored, recs[winner])
	if want := fmt.Sprintf("result-%d", winner); string(stored.Result) != want {
		t.Errorf("stored result %q, want the winner's %q", stored.Result, want)
	}
	for i, err := range errs {
		if i != winner {
			wantErr(t, fmt.Sprintf("Complete %d", i), err, store.ErrAlreadyFinished, &stored)
		}
	}
}

// A Complete and a terminal Reject under one token: one outcome wins, the
// other is told the key already finished.
func testRaceCompleteAgainstReject(t *testing.T, s store.Store) {
	const keys = 16
	held := make([]store.Record, keys)
	for k := range keys {
		held[k] = acquire(t, s, claimP(fmt.Sprintf("k-%d", k)))
	}
	errs := make([]error, 2*keys)
	concurrently(2*keys, func(i int) {
		r := held[i/2]
		if i%2 == 0 {
			_, errs[i] = s.Complete(t.Context(), completeP(r, []byte("done")))
		} else {
			_, errs[i] = s.Reject(t.Context(), rejectP(r, terminal()))
		}
	})
	for k := range keys {
		stored := lookup(t, s, consumer, held[k].Key)
		cErr, rErr := errs[2*k], errs[2*k+1]
		switch {
		case cErr == nil && stored.State == store.Completed:
			wantErr(t, "losing Reject", rErr, store.ErrAlreadyFinished, &stored)
		case rErr == nil && stored.State == store.Rejected:
			wantErr(t, "losing Complete", cErr, store.ErrAlreadyFinished, &stored)
		default:
			t.Errorf("key %d: Complete %v, Reject %v, stored %s: want exactly one winner", k, cErr, rErr, stored.State)
		}
	}
}

// (d) A holder whose lease ran out completes just as another caller takes
// the key over. Either the Complete lands first (and the claim replays it)
// or the takeover does (and the Complete is fenced off), never both.
func testRaceCompleteAgainstTakeover(t *testing.T, s store.Store) {
	const keys = 16
	old := make([]store.Record, keys)
	for k := range keys {
		p := claimP(fmt.Sprintf("k-%d", k))
		p.LeaseTTL = shortTTL // the record itself lives on for an hour
		old[k] = acquire(t, s, p)
	}
	sleepPast(shortTTL)
	done := make([]store.Record, keys)
	doneErr := make([]error, keys)
	claimed := make([]store.ClaimResult, keys)
	claimErr := make([]error, keys)
	concurrently(2*keys, func(i int) {
		k := i / 2
		if i%2 == 0 {
			done[k], doneErr[k] = s.Complete(t.Context(), completeP(old[k], []byte("old holder's result")))
			return
		}
		p := claimP(old[k].Key)
		p.Owner = "worker-2"
		claimed[k], claimErr[k] = s.Claim(t.Context(), p)
	})
	var completeWon, claimWon int
	for k := range keys {
		if claimErr[k] != nil {
			t.Fatalf("key %d: Claim: %v", k, claimErr[k])
		}
		stored := lookup(t, s, consumer, old[k].Key)
		switch {
		case doneErr[k] == nil && claimed[k].Outcome == store.AlreadyCompleted:
			completeWon++
			wantSame(t, "replay after the Complete won", claimed[k].Record, done[k])
			wantSame(t, "stored after the Complete won", stored, done[k])
		case claimed[k].Outcome == store.Acquired:
			claimWon++
			wantErr(t, "Complete after the takeover", doneErr[k], store.ErrLeaseLost, &claimed[k].Record)
			wantSame(t, "stored after the takeover", stored, claimed[k].Record)
			if claimed[k].Record.FencingToken <= old[k].FencingToken {
				t.Errorf("key %d: takeover token %d, want > %d", k, claimed[k].Record.FencingToken, old[k].FencingToken)
			}
		default:
			t.Errorf("key %d: Complete %v and Claim %v: want exactly one of them to win",
				k, doneErr[k], claimed[k].Outcome)
		}
	}
	t.Logf("Complete won %d, takeover won %d", completeWon, claimWon)
}

// (e) Many goroutines claim many keys: each key is acquired exactly once,
// and nobody sees another lease than the first. Workers go in four groups
// that walk the keys in step from four starting points, so each key is
// claimed by four workers at once and later by the other twelve.
func testRaceClaimsOfManyKeys(t *testing.T, s store.Store) {
	const (
		workers = 16
		keys    = 200
	)
	var acquired [keys]atomic.Int32
	concurrently(workers, func(w int) {
		for j := range keys {
			k := (j + w/4*keys/4) % keys
			res, err := s.Claim(t.Context(), claimP(fmt.Sprintf("key-%03d", k)))
			if err != nil {
				t.Errorf("worker %d, key %d: %v", w, k, err)
				return
			}
			if res.Outcome == store.Acquired {
				acquired[k].Add(1)
			} else if res.Outcome != store.InProgress {
				t.Errorf("worker %d, key %d: outcome %v", w, k, res.Outcome)
			}
			if res.Record.FencingToken != 1 {
				t.Errorf("worker %d, key %d: token %d, want 1", w, k, res.Record.FencingToken)
			}
		}
	})
	for k := range keys {
		if n := acquired[k].Load(); n != 1 {
			t.Errorf("key %d acquired %d times, want once", k, n)
		}
	}
	if t.Failed() {
		return
	}
	for k := range keys {
		if r := lookup(t, s, consumer, fmt.Sprintf("key-%03d", k)); r.FencingToken != 1 || r.Attempts != 1 {
			t.Errorf("key %d: token %d attempts %d, want 1, 1", k, r.FencingToken, r.Attempts)
		}
	}
}

// errTokenFromConflict returns the token of the record a ConflictError
// carries, or 0 when err is not one.
func errTokenFromConflict(err error) int64 {
	if ce, ok := errors.AsType[*store.ConflictError](err); ok {
		return ce.Record.FencingToken
	}
	return 0
}
