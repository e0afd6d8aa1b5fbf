// Package storetest is the conformance suite that every store.Store backend
// runs, so that the PostgreSQL, SQLite and any future store keep one
// contract: the one written in package store and decided by store.Apply.
//
// A backend's test calls RunAll with a factory for fresh, empty stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.RunAll(t, func(t *testing.T) store.Store {
//			s := openEmptyStore(t)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The suite only uses the Store interface. Stores decide leases and expiry on
// their own clock (the database's, for a shared database), so the suite
// cannot inject time: a lease or record that must run out is given a short
// TTL and the test sleeps past it, and one that must stay live is given
// minutes. No test asserts a wall-clock duration beyond bounds such as
// "RetryAfter is positive and at most the lease".
//
// The race tests are the heart of the suite: dedupd exists to make
// concurrent callers agree on who does the work. Run it with -race.
package storetest

import (
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// test is one behaviour, run against a store of its own.
type test struct {
	name string
	fn   func(t *testing.T, s store.Store)
}

// RunAll runs every conformance test against stores made by newStore; each
// call must return a fresh, empty store that the suite does not close (the
// factory registers its own cleanup with t.Cleanup).
//
// Every test gets its own store, so that counts such as DeleteExpired's can
// be exact. The tests run one after another, not in parallel: the race tests
// make their own contention, and timing-based tests stay reliable on a small
// machine when nothing else competes with them.
func RunAll(t *testing.T, newStore func(t *testing.T) store.Store) {
	groups := []struct {
		name  string
		tests []test
	}{
		{"Claim", claimTests()},
		{"Finish", finishTests()},
		{"Expiry", expiryTests()},
		{"Keys", keyTests()},
		{"Store", storeTests()},
		{"Race", raceTests()},
		{"Batch", batchTests()},
		{"BatchRace", batchRaceTests()},
		{"Policy", policyTests()},
		{"List", listTests()},
		{"Purge", purgeTests()},
		{"AdminRace", adminRaceTests()},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
			}
		})
	}
}
