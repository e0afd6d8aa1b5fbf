package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

func batchRaceTests() []test {
	return []test{
		{"OverlappingBatchesAndLoneClaims", testRaceOverlappingBatches},
		{"BatchAgainstStaleCompletes", testRaceBatchAgainstStaleCompletes},
	}
}

// Batches naming the same keys in opposite orders, beside lone callers
// claiming them one by one: no deadlock (the test ends) and, across batch
// items and lone calls, exactly one ACQUIRED per key, whose record every
// other claim of the key saw.
func testRaceOverlappingBatches(t *testing.T, s store.Store) {
	const (
		keys    = 60
		batches = 6
		lone    = 6
	)
	names := make([]string, keys)
	for k := range names {
		names[k] = fmt.Sprintf("k%03d", k)
	}
	var (
		acquired [keys]atomic.Int32
		winners  [keys]atomic.Pointer[store.Record]
		seen     = make([][]store.ItemResult, batches+lone)
	)
	concurrently(batches+lone, func(i int) {
		order := slices.Clone(names)
		if i%2 == 1 {
			slices.Reverse(order)
		}
		var res []store.ItemResult
		if i < batches {
			cmds := make([]store.Command, keys)
			for j, k := range order {
				cmds[j] = claimP(k)
			}
			res = s.ApplyBatch(t.Context(), store.BatchParams{Commands: cmds})
		} else {
			for _, k := range order {
				r, err := s.Claim(t.Context(), claimP(k))
				res = append(res, store.ItemResult{Outcome: r.Outcome, Record: r.Record, Err: err})
			}
		}
		for _, r := range res {
			if r.Err != nil {
				t.Errorf("caller %d: %v", i, r.Err)
				continue
			}
			k := keyIndex(r.Record.Key)
			if r.Outcome == store.Acquired {
				acquired[k].Add(1)
				winners[k].Store(&r.Record)
			} else if r.Outcome != store.InProgress {
				t.Errorf("caller %d, key %s: outcome %v", i, r.Record.Key, r.Outcome)
			}
		}
		seen[i] = res
	})
	if t.Failed() {
		return
	}
	for k := range keys {
		if n := acquired[k].Load(); n != 1 {
			t.Fatalf("key %s acquired %d times, want exactly once", names[k], n)
		}
	}
	for i, res := range seen {
		for _, r := range res {
			if d := diffRecord(r.Record, *winners[keyIndex(r.Record.Key)].Load()); d != "" {
				t.Errorf("caller %d saw a record of %s other than the winner's:\n%s", i, r.Record.Key, d)
			}
		}
	}
	for k := range names {
		wantUnchanged(t, s, *winners[k].Load())
	}
}

// keyIndex is the number in a key named k%03d.
func keyIndex(key string) int {
	k, _ := strconv.Atoi(strings.TrimPrefix(key, "k")) // the test names every key so
	return k
}

// A batch of Completes racing lone Completes of the same keys, one side
// holding each key's current lease and the other a stale one (the lease
// it held before a takeover), alternating key by key: on every key the
// current holder succeeds, the stale one is told LEASE_LOST, and the
// stored result is the current holder's.
func testRaceBatchAgainstStaleCompletes(t *testing.T, s store.Store) {
	const keys = 24
	stale := make([]store.Record, keys)
	current := make([]store.Record, keys)
	for k := range keys {
		p := claimP(fmt.Sprintf("k%03d", k))
		p.LeaseTTL = shortTTL
		stale[k] = acquire(t, s, p)
	}
	sleepPast(shortTTL)
	for k := range keys {
		current[k] = acquire(t, s, claimP(stale[k].Key))
	}
	// Caller 0 is the batch; callers 1..keys complete one key each.
	batchHolds := func(k int) store.Record {
		if k%2 == 0 {
			return current[k]
		}
		return stale[k]
	}
	loneHolds := func(k int) store.Record {
		if k%2 == 0 {
			return stale[k]
		}
		return current[k]
	}
	result := func(r store.Record) []byte { return fmt.Appendf(nil, "token-%d", r.FencingToken) }
	var batchRes []store.ItemResult
	loneErrs := make([]error, keys)
	concurrently(keys+1, func(i int) {
		if i == 0 {
			cmds := make([]store.Command, keys)
			for k := range keys {
				cmds[k] = completeP(batchHolds(k), result(batchHolds(k)))
			}
			batchRes = s.ApplyBatch(t.Context(), store.BatchParams{Commands: cmds})
			return
		}
		k := i - 1
		_, loneErrs[k] = s.Complete(t.Context(), completeP(loneHolds(k), result(loneHolds(k))))
	})
	for k := range keys {
		batchErr, loneErr := batchRes[k].Err, loneErrs[k]
		if k%2 == 1 {
			batchErr, loneErr = loneErr, batchErr
		}
		// batchErr is now the current holder's error, loneErr the stale one's.
		if batchErr != nil {
			t.Errorf("key %d: the current holder's Complete failed: %v", k, batchErr)
		}
		if !errors.Is(loneErr, store.ErrLeaseLost) {
			t.Errorf("key %d: the stale holder's Complete: %v, want ErrLeaseLost", k, loneErr)
		}
		got := lookup(t, s, consumer, current[k].Key)
		if got.State != store.Completed || string(got.Result) != string(result(current[k])) {
			t.Errorf("key %d: stored %s %q, want COMPLETED %q", k, got.State, got.Result, result(current[k]))
		}
	}
}
