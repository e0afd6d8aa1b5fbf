package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func expiryTests() []test {
	return []test{
		{"LookupUnknown", testLookupUnknown},
		{"LookupExpired", testLookupExpired},
		{"ClaimExpired", testClaimExpired},
		{"FinishExpired", testFinishExpired},
		{"DeleteExpiredEmpty", testDeleteExpiredEmpty},
		{"DeleteExpiredBatches", testDeleteExpiredBatches},
		{"DeleteExpiredThenClaim", testDeleteExpiredThenClaim},
		{"DeleteExpiredSparesTheNearlyExpired", testDeleteExpiredSparesTheNearlyExpired},
	}
}

// expiredSetups bring a key into each state so that the record is forgotten
// within 2*shortTTL of its setup. Only the last call of a setup uses
// shortPolicy: the record must live until the setup is done, however slow
// the machine.
var expiredSetups = []struct {
	name  string
	setup func(t *testing.T, s store.Store, key string) store.Record
}{
	{"pending", func(t *testing.T, s store.Store, key string) store.Record {
		return acquire(t, s, shortClaim(key))
	}},
	{"completed", func(t *testing.T, s store.Store, key string) store.Record {
		p := completeP(acquire(t, s, claimP(key)), []byte("result"))
		p.Policy = shortPolicy()
		return complete(t, s, p)
	}},
	{"rejected", func(t *testing.T, s store.Store, key string) store.Record {
		p := rejectP(acquire(t, s, claimP(key)), terminal())
		p.Policy = shortPolicy()
		return reject(t, s, p)
	}},
	{"released", func(t *testing.T, s store.Store, key string) store.Record {
		p := rejectP(acquire(t, s, claimP(key)), retryable())
		p.Policy = shortPolicy()
		return reject(t, s, p)
	}},
}

func shortClaim(key string) store.ClaimParams {
	p := claimP(key)
	p.LeaseTTL, p.Policy = shortTTL, shortPolicy()
	return p
}

// makeExpired sets up one key per state (n times over) and waits until all
// are forgotten. It returns the records as they were.
func makeExpired(t *testing.T, s store.Store, prefix string, n int) []store.Record {
	t.Helper()
	var recs []store.Record
	for i := range n {
		st := expiredSetups[i%len(expiredSetups)]
		recs = append(recs, st.setup(t, s, fmt.Sprintf("%s%s-%d", prefix, st.name, i)))
	}
	sleepPast(2 * shortTTL)
	return recs
}

func testLookupUnknown(t *testing.T, s store.Store) {
	wantNotFound(t, s, consumer, "never-claimed")
	acquire(t, s, claimP("k"))
	wantNotFound(t, s, "other-consumer", "k")
	wantNotFound(t, s, consumer, "K")
}

// An expired record counts as absent whether or not it was deleted yet.
func testLookupExpired(t *testing.T, s store.Store) {
	for _, r := range makeExpired(t, s, "", len(expiredSetups)) {
		wantNotFound(t, s, r.Consumer, r.Key)
	}
}

// A claim of an expired key starts over: the new digest binds, attempts
// restart, and the fencing token still grows when the row was kept, so that
// a holder from the forgotten life cannot pass for the new one.
func testClaimExpired(t *testing.T, s store.Store) {
	for _, old := range makeExpired(t, s, "", len(expiredSetups)) {
		t.Run(string(old.State), func(t *testing.T) {
			p := claimP(old.Key)
			p.Digest, p.Owner = digest2, "worker-2"
			r := acquire(t, s, p)
			if r.FencingToken <= old.FencingToken || r.Attempts != 1 || string(r.Digest) != string(digest2) ||
				r.Owner != "worker-2" || len(r.Result) != 0 || r.Rejection != nil {
				t.Errorf("claim of an expired %s key: %+v, want a fresh PENDING record with token > %d, attempt 1",
					old.State, r, old.FencingToken)
			}
			if got := r.LeaseExpiresAt.Sub(r.CreatedAt); got != longTTL || !r.CreatedAt.Equal(r.UpdatedAt) {
				t.Errorf("fresh lease runs %v from creation, want %v, created = updated", got, longTTL)
			}
			_, err := s.Complete(t.Context(), completeP(old, []byte("zombie")))
			wantErr(t, "Complete by the forgotten holder", err, store.ErrLeaseLost, &r)
			wantSame(t, "Lookup", lookup(t, s, consumer, old.Key), r)
		})
	}
}

// Finishing an expired record is refused even when it would have been an
// idempotent repeat: the record is gone.
func testFinishExpired(t *testing.T, s store.Store) {
	for _, old := range makeExpired(t, s, "", len(expiredSetups)) {
		t.Run(string(old.State), func(t *testing.T) {
			for _, name := range []string{"complete", "reject", "release", "extend"} {
				err := finishCalls[name].call(t.Context(), s, old)
				wantErr(t, finishCalls[name].name, err, store.ErrLeaseLost, nil)
			}
			if old.State == store.Completed {
				_, err := s.Complete(t.Context(), completeP(old, old.Result))
				wantErr(t, "repeated Complete", err, store.ErrLeaseLost, nil)
			}
			wantNotFound(t, s, old.Consumer, old.Key)
		})
	}
}

func testDeleteExpiredEmpty(t *testing.T, s store.Store) {
	if n, err := s.DeleteExpired(t.Context(), 10); n != 0 || err != nil {
		t.Errorf("DeleteExpired on an empty store = %d, %v; want 0, nil", n, err)
	}
}

// makeLive creates one live record per state, including a pending one whose
// lease has run out but whose record is kept.
func makeLive(t *testing.T, s store.Store) []store.Record {
	t.Helper()
	var live []store.Record
	for _, st := range stateSetups {
		live = append(live, st.setup(t, s, "live-"+st.name, digest1))
	}
	return live
}

func testDeleteExpiredBatches(t *testing.T, s store.Store) {
	live := makeLive(t, s)
	makeExpired(t, s, "gone-", 25) // also lets the live "lapsed" lease run out
	for i, want := range []int{10, 10, 5, 0} {
		n, err := s.DeleteExpired(t.Context(), 10)
		if err != nil || n != want {
			t.Fatalf("DeleteExpired call %d = %d, %v; want %d, nil", i+1, n, err, want)
		}
	}
	for _, r := range live {
		wantUnchanged(t, s, r)
	}
}

// After the reaper deleted a record, the key is simply new.
func testDeleteExpiredThenClaim(t *testing.T, s store.Store) {
	old := makeExpired(t, s, "", 1)[0]
	if n, err := s.DeleteExpired(t.Context(), 100); n != 1 || err != nil {
		t.Fatalf("DeleteExpired = %d, %v; want 1, nil", n, err)
	}
	wantNotFound(t, s, old.Consumer, old.Key)
	p := claimP(old.Key)
	p.Digest = digest2
	r := acquire(t, s, p)
	if r.Attempts != 1 || r.State != store.Pending || string(r.Digest) != string(digest2) {
		t.Errorf("claim after deletion: %+v, want a fresh PENDING record", r)
	}
}

// The reaper never deletes a record that is still live on the store's
// clock, however close to its expiry. Each round completes a record that
// expires edgeTTL later (under a second, so that a reaper deleting up to a
// second early takes it at once), waits until some of that time is left
// (all of it, or 100, 20 or 5 ms, by the local clock), runs
// DeleteExpired, looks the record up, and then reads the store's clock
// through a probe claim's CreatedAt. That reading comes after both calls,
// so if it is still before the record's expiry, the record was live
// throughout and the lookup must find it. A round in which the machine was
// too slow for that proves nothing either way and is not counted; no
// assertion depends on how fast the machine is, only the rounds that
// conclude.
func testDeleteExpiredSparesTheNearlyExpired(t *testing.T, s store.Store) {
	const edgeTTL = 600 * time.Millisecond
	lefts := []time.Duration{edgeTTL, 100 * time.Millisecond, 20 * time.Millisecond, edgeTTL, 5 * time.Millisecond}
	concluded := 0
	for round, left := range lefts {
		p := completeP(acquire(t, s, claimP(fmt.Sprintf("edge-%d", round))), []byte("result"))
		p.Policy.CompletedTTL = edgeTTL
		r := complete(t, s, p)
		time.Sleep(time.Until(r.ExpiresAt) - left)
		if _, err := s.DeleteExpired(t.Context(), 100); err != nil {
			t.Fatalf("DeleteExpired: %v", err)
		}
		found, lookupErr := s.Lookup(t.Context(), r.Consumer, r.Key)
		clock := acquire(t, s, claimP(fmt.Sprintf("clock-%d", round))).CreatedAt
		if !clock.Before(r.ExpiresAt) {
			continue // the record may have expired before the lookup
		}
		concluded++
		switch {
		case errors.Is(lookupErr, store.ErrNotFound):
			t.Fatalf("round %d: the reaper deleted %q, which the store's clock says had at least %v left to live",
				round, r.Key, r.ExpiresAt.Sub(clock))
		case lookupErr != nil:
			t.Fatalf("round %d: Lookup: %v", round, lookupErr)
		}
		if d := diffRecord(found, r); d != "" {
			t.Errorf("round %d: record of %q changed:\n%s", round, r.Key, d)
		}
	}
	if concluded == 0 {
		t.Fatal("no round finished before its record expired, so none could tell an early reaper from a correct one; the machine is overloaded")
	}
	t.Logf("%d of %d rounds concluded", concluded, len(lefts))
}
