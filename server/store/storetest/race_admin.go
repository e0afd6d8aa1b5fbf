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

func adminRaceTests() []test {
	return []test{
		{"DeleteRecordAgainstComplete", testRaceDeleteRecordAgainstComplete},
		{"DeleteRecordAgainstItself", testRaceDeleteRecordAgainstItself},
		{"PurgeAgainstOtherConsumers", testRacePurgeAgainstOtherConsumers},
		{"PurgeAgainstPurge", testRacePurgeAgainstPurge},
	}
}

// testListPagingDuringChurn pages through a consumer while other goroutines
// insert, complete and delete other keys of it. Every key that stays live
// throughout is listed exactly once, no key twice, in increasing order.
func testListPagingDuringChurn(t *testing.T, s store.Store) {
	const stable, churners, perChurner = 60, 4, 40
	var want []string
	for i := range stable {
		k := fmt.Sprintf("k%03d-stable", i*2)
		want = append(want, k)
		makeIn(t, s, consumer, k, store.Completed)
	}
	// Churn keys interleave with the stable ones, so that every page
	// boundary sees inserts and deletes on both sides.
	var churned atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range churners {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				k := fmt.Sprintf("k%03d-churn-%d-%d", (i*7+c*13)%(2*stable)|1, c, i)
				p := claimP(k)
				res, err := s.Claim(t.Context(), p)
				if err == nil && i%2 == 0 {
					_, err = s.Complete(t.Context(), completeP(res.Record, []byte("r")))
				}
				if err == nil {
					_, err = s.DeleteRecord(t.Context(), consumer, k)
				}
				if err != nil {
					t.Errorf("churn %s: %v", k, err)
					return
				}
				churned.Add(1)
			}
		})
	}
	// Page until the churners have done a fair amount of work, so that the
	// pages really overlap it, however the goroutines get scheduled.
	for rounds := 0; rounds < 3 || churned.Load() < churners*perChurner; rounds++ {
		got := pageAll(t, s, store.ListParams{Consumer: consumer, Limit: 7})
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("round %d: keys out of order or repeated: %q", rounds, got)
		}
		var stables []string
		for _, k := range got {
			if len(k) > 4 && k[4:] == "-stable" {
				stables = append(stables, k)
			}
		}
		if !slices.Equal(stables, want) {
			t.Fatalf("round %d: stable keys listed %q, want each of %q once", rounds, stables, want)
		}
		if t.Failed() {
			break
		}
	}
	close(stop)
	wg.Wait()
}

// A DeleteRecord racing the holder's Complete: either the Complete lands
// first and the delete returns the completed record, or the delete lands
// first and the Complete loses its lease. Either way the key ends absent.
func testRaceDeleteRecordAgainstComplete(t *testing.T, s store.Store) {
	const keys = 16
	held := make([]store.Record, keys)
	for i := range keys {
		held[i] = acquire(t, s, claimP(fmt.Sprintf("k%02d", i)))
	}
	deleted := make([]store.Record, keys)
	delErrs, completeErrs := make([]error, keys), make([]error, keys)
	concurrently(2*keys, func(i int) {
		k := i / 2
		if i%2 == 0 {
			deleted[k], delErrs[k] = s.DeleteRecord(t.Context(), consumer, held[k].Key)
		} else {
			_, completeErrs[k] = s.Complete(t.Context(), completeP(held[k], []byte("done")))
		}
	})
	for k := range keys {
		key := held[k].Key
		if delErrs[k] != nil {
			t.Errorf("%s: DeleteRecord: %v", key, delErrs[k])
			continue
		}
		switch {
		case completeErrs[k] == nil && deleted[k].State != store.Completed:
			t.Errorf("%s: Complete succeeded but the delete returned a %s record", key, deleted[k].State)
		case completeErrs[k] != nil && !errors.Is(completeErrs[k], store.ErrLeaseLost):
			t.Errorf("%s: Complete: %v", key, completeErrs[k])
		case completeErrs[k] != nil && deleted[k].State != store.Pending:
			t.Errorf("%s: Complete lost its lease but the delete returned a %s record", key, deleted[k].State)
		}
		wantNotFound(t, s, consumer, key)
		if next := acquire(t, s, claimP(key)); next.FencingToken != held[k].FencingToken+1 {
			t.Errorf("%s: claim after the race got token %d, want %d", key, next.FencingToken, held[k].FencingToken+1)
		}
	}
}

// Of many concurrent deletes of one key exactly one succeeds.
func testRaceDeleteRecordAgainstItself(t *testing.T, s store.Store) {
	const n = 16
	makeIn(t, s, consumer, "k", store.Completed)
	errs := make([]error, n)
	concurrently(n, func(i int) {
		_, errs[i] = s.DeleteRecord(t.Context(), consumer, "k")
	})
	ok := 0
	for i, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrNotFound):
			t.Errorf("delete %d: %v", i, err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d of %d concurrent deletes of one key succeeded, want 1", ok, n)
	}
}

// A purge of one consumer, batch after batch, while other consumers claim
// and complete: the purge deletes exactly its consumer's records, and every
// other consumer's write lands and stays.
func testRacePurgeAgainstOtherConsumers(t *testing.T, s store.Store) {
	const victims, writers, perWriter = 120, 8, 15
	for i := range victims {
		makeIn(t, s, "victim", fmt.Sprintf("k%03d", i), store.Completed)
	}
	var purged atomic.Int64
	concurrently(writers+1, func(i int) {
		if i == writers {
			purgeUntilEmpty(t, s, store.PurgeParams{Consumer: "victim", Limit: 10}, &purged)
			return
		}
		for j := range perWriter {
			p := claimP(fmt.Sprintf("k%03d", j))
			p.Consumer = fmt.Sprintf("writer-%d", i)
			res, err := s.Claim(t.Context(), p)
			if err == nil {
				_, err = s.Complete(t.Context(), completeP(res.Record, []byte("kept")))
			}
			if err != nil {
				t.Errorf("%s %s: %v", p.Consumer, p.Key, err)
				return
			}
		}
	})
	if purged.Load() != victims {
		t.Errorf("purged %d records, want %d", purged.Load(), victims)
	}
	all := stats(t, s, "")
	if len(all) != writers {
		t.Fatalf("Stats after the purge: %+v; want only the %d writers", all, writers)
	}
	for _, st := range all {
		if st != (store.ConsumerStats{Consumer: st.Consumer, Completed: perWriter}) {
			t.Errorf("writer's records after the purge: %+v, want %d completed", st, perWriter)
		}
	}
}

// Two purges of the same records delete each once between them.
func testRacePurgeAgainstPurge(t *testing.T, s store.Store) {
	const records, purgers = 90, 4
	for i := range records {
		makeIn(t, s, consumer, fmt.Sprintf("k%03d", i), []store.State{store.Completed, store.Rejected}[i%2])
	}
	makeIn(t, s, "billing", "k000", store.Completed)
	var purged atomic.Int64
	concurrently(purgers, func(int) {
		purgeUntilEmpty(t, s, store.PurgeParams{Consumer: consumer, Limit: 7}, &purged)
	})
	if purged.Load() != records {
		t.Errorf("concurrent purges deleted %d in all, want %d", purged.Load(), records)
	}
	if n, err := s.CountPurge(t.Context(), store.PurgeParams{Consumer: consumer}); err != nil || n != 0 {
		t.Errorf("CountPurge after = %d, %v; want 0", n, err)
	}
	lookup(t, s, "billing", "k000")
}

// purgeUntilEmpty calls PurgeBatch with p until a batch deletes nothing,
// adding what each deleted to purged. It runs beside other goroutines, so
// a failure is reported with t.Errorf and ends only this caller.
func purgeUntilEmpty(t *testing.T, s store.Store, p store.PurgeParams, purged *atomic.Int64) {
	for {
		n, err := s.PurgeBatch(t.Context(), p)
		if err != nil {
			t.Errorf("PurgeBatch: %v", err)
			return
		}
		if n == 0 {
			return
		}
		purged.Add(int64(n))
	}
}
