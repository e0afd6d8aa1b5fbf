package pebblestore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// TestKeyFilterHoldsEveryKeyAdded: a filter never answers "never added"
// for a key it took, filled to twice its capacity; and for keys it never
// took, it answers "may hold" at close to the rate a blocked Bloom filter
// of 10 bits a key has at capacity (computed below), and far less when a
// quarter full.
func TestKeyFilterHoldsEveryKeyAdded(t *testing.T) {
	const capacity = 100_000
	f := newKeyFilter(capacity, 1<<30)
	key := func(i int) []byte { return rowKey(tableRecord, "c", fmt.Sprintf("key-%d", i)) }
	falsePositives := func(from, n int) float64 {
		hits := 0
		for i := from; i < from+n; i++ {
			if f.mayHold(key(i)) {
				hits++
			}
		}
		return float64(hits) / float64(n)
	}
	for i := range capacity / 4 {
		f.add(key(i))
	}
	if r := falsePositives(1<<30, 100_000); r > 0.001 {
		t.Errorf("a quarter full: %.4f of keys never added are answered 'may hold', want under 0.001", r)
	}
	for i := capacity / 4; i < capacity; i++ {
		f.add(key(i))
	}
	// Per key, 8 bits land in 8 words of a 512-bit block; a block holds
	// 51.2 keys on average at capacity, so a word has 51.2 bits set of 64
	// tries: P(bit set) = 1-(63/64)^51.2 = 0.552, and all 8 set = 0.0086
	// for a block of average load. Blocks vary in load (Poisson), which
	// raises it to about 1.2%.
	if r := falsePositives(1<<30, 100_000); r < 0.004 || r > 0.025 {
		t.Errorf("at capacity: %.4f of keys never added are answered 'may hold', want 0.004 to 0.025", r)
	}
	for i := capacity; i < 2*capacity; i++ {
		f.add(key(i))
	}
	for i := range 2 * capacity {
		if !f.mayHold(key(i)) {
			t.Fatalf("key %d was added and the filter says it never was", i)
		}
	}
}

// TestFilterSeesKeysWrittenBeforeOpen: a key written in an earlier run of
// the store is claimed again after a reopen, once the filter is built from
// the data, and is found (IN_PROGRESS), not taken as new.
func TestFilterSeesKeysWrittenBeforeOpen(t *testing.T) {
	dir := t.TempDir()
	s := openFiltered(t, dir, 0)
	const n = 2000
	for i := range n {
		if r := claim(t, s, fmt.Sprintf("k%d", i)); r.Outcome != store.Acquired {
			t.Fatalf("first claim of k%d: %v", i, r.Outcome)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openFiltered(t, dir, 0)
	defer s.Close()
	waitForFilter(t, s)
	for i := range n {
		if r := claim(t, s, fmt.Sprintf("k%d", i)); r.Outcome != store.InProgress {
			t.Fatalf("claim of k%d after reopen: %v, want IN_PROGRESS", i, r.Outcome)
		}
	}
	// The filter is what answers a new key: it must skip most of their reads.
	skipped := 0
	for i := range 1000 {
		if !s.mayHoldRecord(rowKey(tableRecord, "c", fmt.Sprintf("new%d", i))) {
			skipped++
		}
	}
	if skipped < 950 {
		t.Errorf("the filter answered 'never seen' for %d of 1000 new keys, want at least 950", skipped)
	}
}

// TestFilterRebuildsMissNoKey races claims against the filter's rebuilds:
// a filter of 256 bytes (204 keys) is rebuilt each time the keys double
// while 16 writers claim, each key twice, by two writers in different orders.
// Every key must be acquired exactly once: a key a rebuild lost would be
// taken as new by its second claim and acquired again.
func TestFilterRebuildsMissNoKey(t *testing.T) {
	s := openFiltered(t, t.TempDir(), 256)
	defer s.Close()
	waitForFilter(t, s)
	const writers, keys = 16, 6000
	var mu sync.Mutex
	acquired := make(map[string]int, keys)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			// Writer w claims keys w, w+8, w+16 ... in order; writer w+8
			// the same keys shuffled, so each key has two claimants at
			// different times.
			var mine []int
			for k := w % 8; k < keys; k += 8 {
				mine = append(mine, k)
			}
			if w >= 8 {
				rand.Shuffle(len(mine), func(i, j int) { mine[i], mine[j] = mine[j], mine[i] })
			}
			for _, k := range mine {
				name := fmt.Sprintf("key-%d", k)
				if r := claim(t, s, name); r.Outcome == store.Acquired {
					mu.Lock()
					acquired[name]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for k := range keys {
		if n := acquired[fmt.Sprintf("key-%d", k)]; n != 1 {
			t.Errorf("key-%d acquired %d times, want once", k, n)
		}
	}
	if b := s.filter.builds.Load(); b < 5 {
		t.Errorf("the filter was built %d times, want at least 5: the test did not race rebuilds", b)
	}
}

func openFiltered(t *testing.T, dir string, filterBytes int64) *Store {
	t.Helper()
	s, err := open(dir, Options{filterBytes: filterBytes}, false)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

func claim(t *testing.T, s *Store, key string) store.ClaimResult {
	t.Helper()
	r, err := s.Claim(context.Background(), store.ClaimParams{Consumer: "c", Key: key, Digest: []byte("d"),
		Owner: "o", Policy: store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: time.Hour,
			RejectedTTL: time.Hour, ReleasedTTL: time.Hour}})
	if err != nil {
		t.Errorf("claim %s: %v", key, err) // Errorf: writers call it from their goroutines
	}
	return r
}

// waitForFilter waits for the first build of the filter, which runs in
// the background from Open. It ends by the build's progress, not a clock.
func waitForFilter(t *testing.T, s *Store) {
	t.Helper()
	for s.filter.current.Load() == nil {
		time.Sleep(time.Millisecond)
	}
}

// TestRebuildAt: a filter is rebuilt once full, and never after fewer new
// keys than half its capacity or than the keys its scan found.
func TestRebuildAt(t *testing.T) {
	for _, c := range []struct{ capacity, scanned, want int64 }{
		{capacity: 1000, scanned: 0, want: 1000},     // empty: when full
		{capacity: 1000, scanned: 400, want: 1000},   // when full, 600 keys on
		{capacity: 1000, scanned: 600, want: 1200},   // half the capacity on
		{capacity: 1000, scanned: 900, want: 1800},   // as many as it scanned
		{capacity: 1000, scanned: 5000, want: 10000}, // a store past the largest filter
	} {
		if got := rebuildAt(c.capacity, c.scanned); got != c.want {
			t.Errorf("rebuildAt(%d, %d) = %d, want %d", c.capacity, c.scanned, got, c.want)
		}
	}
}
