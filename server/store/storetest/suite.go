// Package storetest is the conformance suite that every store.Backend
// runs, so that the PostgreSQL, SQLite and any future store, and every
// decorator stacked on one, keep one contract: the one written in package
// store and decided by store.Apply and store.ApplyStream.
//
// A backend's test calls RunAll with a factory for fresh, empty stores:
//
//	func TestConformance(t *testing.T) {
//		storetest.RunAll(t, func(t *testing.T) store.Backend {
//			s := openEmptyStore(t)
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// RunAll is the only entry point: it runs every group, keys and streams
// alike, so that no backend or decorator can leave one out.
//
// The suite only uses the Backend interface. Stores decide leases and
// expiry on their own clock (the database's, for a shared database), so the
// suite cannot inject time: a lease or record that must run out is given a
// short TTL and the test sleeps past it, and one that must stay live is
// given minutes. No test asserts a wall-clock duration beyond bounds such
// as "RetryAfter is positive and at most the lease".
//
// The race tests are the heart of the suite: dedupd exists to make
// concurrent callers agree on who does the work. Run it with -race.
package storetest

import (
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// suiteTest is one behaviour, run against a store of its own; S is the
// part of the contract it exercises.
type suiteTest[S any] struct {
	name string
	fn   func(t *testing.T, s S)
}

// group is a named list of tests.
type group[S any] struct {
	name  string
	tests []suiteTest[S]
}

// test is a behaviour of keys, streamTest one of streams.
type (
	test       = suiteTest[store.Store]
	streamTest = suiteTest[store.StreamStore]
)

// keyGroups are the groups of the key contract (store.Store).
func keyGroups() []group[store.Store] {
	return []group[store.Store]{
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
}

// streamGroups are the groups of the stream contract (store.StreamStore):
// every row of the claim table of store.ApplyStream is one test at least,
// and the race tests show that the store's one-row atomic step holds under
// contention.
func streamGroups() []group[store.StreamStore] {
	return []group[store.StreamStore]{
		{"StreamClaim", streamClaimTests()},
		{"StreamFinish", streamFinishTests()},
		{"StreamAdmin", streamAdminTests()},
		{"StreamRace", streamRaceTests()},
		{"Park", parkTests()},
		{"ParkRace", parkRaceTests()},
	}
}

// RunAll runs every conformance test, of keys and of streams, against
// stores made by newStore; each call must return a fresh, empty store that
// the suite does not close (the factory registers its own cleanup with
// t.Cleanup).
//
// Every test gets its own store, so that counts such as DeleteExpired's can
// be exact. The tests run one after another, not in parallel: the race tests
// make their own contention, and timing-based tests stay reliable on a small
// machine when nothing else competes with them.
func RunAll(t *testing.T, newStore func(t *testing.T) store.Backend) {
	run(t, keyGroups(), func(t *testing.T) store.Store { return newStore(t) })
	run(t, streamGroups(), func(t *testing.T) store.StreamStore { return newStore(t) })
}

func run[S any](t *testing.T, groups []group[S], newStore func(t *testing.T) S) {
	t.Helper()
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, newStore(t)) })
			}
		})
	}
}
