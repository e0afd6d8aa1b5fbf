package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// The batch tests hold ApplyBatch and LookupBatch to their contract: each
// item answers as its lone call would, commands on one key take effect in
// batch order, and a batch is not a transaction.

func batchTests() []test {
	return []test{
		{"ClaimOutcomes", testBatchClaimOutcomes},
		{"FinishOutcomes", testBatchFinishOutcomes},
		{"DuplicateKeys", testBatchDuplicateKeys},
		{"Lookup", testBatchLookup},
		{"Empty", testBatchEmpty},
		{"ManyChunks", testBatchManyChunks},
		{"CanceledContext", testBatchCanceled},
	}
}

// wantItem is what one item of a batch must answer: an outcome (claims
// only) and no error, or an error matching err.
type wantItem struct {
	outcome store.Outcome
	err     error
}

func applyBatch(t *testing.T, s store.Store, cmds ...store.Command) []store.ItemResult {
	t.Helper()
	res := s.ApplyBatch(t.Context(), store.BatchParams{Commands: cmds})
	if len(res) != len(cmds) {
		t.Fatalf("ApplyBatch of %d commands returned %d results", len(cmds), len(res))
	}
	return res
}

// checkItems compares each result with its want, and checks that every
// successful item's record is in normal form.
func checkItems(t *testing.T, res []store.ItemResult, want []wantItem) {
	t.Helper()
	for i, w := range want {
		r := res[i]
		switch {
		case w.err != nil:
			if !errors.Is(r.Err, w.err) {
				t.Errorf("item %d: error %v, want %v", i, r.Err, w.err)
			}
		case r.Err != nil:
			t.Errorf("item %d: error %v, want outcome %v", i, r.Err, w.outcome)
		default:
			if r.Outcome != w.outcome {
				t.Errorf("item %d: outcome %v, want %v", i, r.Outcome, w.outcome)
			}
			checkNormal(t, fmt.Sprintf("item %d", i), r.Record)
		}
	}
}

// Every claim outcome and error in one batch, each on a key prepared in the
// state that calls for it.
func testBatchClaimOutcomes(t *testing.T, s store.Store) {
	held := acquire(t, s, claimP("held"))
	done := complete(t, s, completeP(acquire(t, s, claimP("done")), []byte("ok")))
	refused := reject(t, s, rejectP(acquire(t, s, claimP("refused")), terminal()))
	released := reject(t, s, rejectP(acquire(t, s, claimP("released")), retryable()))
	other := claimP("mismatch")
	other.Digest = digest2
	mismatch := complete(t, s, completeP(acquire(t, s, other), []byte("x")))

	res := applyBatch(t, s, claimP("fresh"), claimP("held"), claimP("done"), claimP("refused"),
		claimP("released"), claimP("mismatch"))
	checkItems(t, res, []wantItem{
		{outcome: store.Acquired}, {outcome: store.InProgress}, {outcome: store.AlreadyCompleted},
		{outcome: store.AlreadyRejected}, {outcome: store.Acquired}, {err: store.ErrDigestMismatch},
	})
	if t.Failed() {
		return
	}
	if r := res[0].Record; r.State != store.Pending || r.FencingToken != 1 || r.Attempts != 1 {
		t.Errorf("fresh key: %+v, want PENDING with token 1", r)
	}
	wantSame(t, "fresh key: Lookup after the batch", lookup(t, s, consumer, "fresh"), res[0].Record)
	wantSame(t, "held key", res[1].Record, held)
	if res[1].RetryAfter <= 0 || res[1].RetryAfter > longTTL {
		t.Errorf("held key: RetryAfter %v, want within (0, %v]", res[1].RetryAfter, longTTL)
	}
	wantSame(t, "completed key", res[2].Record, done)
	wantSame(t, "rejected key", res[3].Record, refused)
	if r := res[4].Record; r.State != store.Pending || r.FencingToken != released.FencingToken+1 || r.Attempts != 2 {
		t.Errorf("released key: %+v, want PENDING with token %d, attempt 2", r, released.FencingToken+1)
	}
	wantSame(t, "released key: Lookup after the batch", lookup(t, s, consumer, "released"), res[4].Record)
	wantErr(t, "mismatched digest", res[5].Err, store.ErrDigestMismatch, &mismatch)
	wantUnchanged(t, s, mismatch)
}

// Every finishing outcome and error in one batch.
func testBatchFinishOutcomes(t *testing.T, s store.Store) {
	a := acquire(t, s, claimP("a"))
	b := acquire(t, s, claimP("b"))
	c := acquire(t, s, claimP("c"))
	d := acquire(t, s, claimP("d"))
	done := complete(t, s, completeP(acquire(t, s, claimP("done")), []byte("ok")))
	stale := a
	stale.FencingToken++
	absent := store.Record{Consumer: consumer, Key: "absent", FencingToken: 1}

	res := applyBatch(t, s,
		completeP(stale, []byte("x")),    // 0 a token that is not current
		completeP(a, []byte("result-a")), // 1 completes
		rejectP(b, terminal()),           // 2 rejects for good
		rejectP(c, retryable()),          // 3 releases
		extendP(d, 2*longTTL),            // 4 extends
		completeP(done, []byte("ok")),    // 5 repeats: the stored record
		completeP(done, []byte("other")), // 6 a different outcome
		extendP(done, longTTL),           // 7 extends a finished key
		completeP(absent, []byte("x")),   // 8 no record
	)
	checkItems(t, res, []wantItem{
		{err: store.ErrLeaseLost}, {}, {}, {}, {}, {},
		{err: store.ErrAlreadyFinished}, {err: store.ErrAlreadyFinished}, {err: store.ErrLeaseLost},
	})
	if t.Failed() {
		return
	}
	if r := res[1].Record; r.State != store.Completed || string(r.Result) != "result-a" {
		t.Errorf("Complete: %+v, want COMPLETED with result-a", r)
	}
	if r := res[2].Record; r.State != store.Rejected || !sameRejection(r.Rejection, new(terminal())) {
		t.Errorf("terminal Reject: %+v, want REJECTED", r)
	}
	if r := res[3].Record; r.State != store.Released {
		t.Errorf("retryable Reject: %+v, want RELEASED", r)
	}
	if got := res[4].Record.LeaseExpiresAt.Sub(res[4].Record.UpdatedAt); got != 2*longTTL {
		t.Errorf("ExtendLease: lease of %v, want %v", got, 2*longTTL)
	}
	for i, key := range map[int]string{1: "a", 2: "b", 3: "c", 4: "d"} {
		wantSame(t, "Lookup of "+key+" after the batch", lookup(t, s, consumer, key), res[i].Record)
	}
	wantSame(t, "repeated Complete", res[5].Record, done)
	wantErr(t, "Complete with another result", res[6].Err, store.ErrAlreadyFinished, &done)
	wantUnchanged(t, s, done)
	wantNotFound(t, s, consumer, "absent")
}

// A key named twice in a batch: the second command answers as a lone call
// arriving just after the first would.
func testBatchDuplicateKeys(t *testing.T, s store.Store) {
	other := claimP("k")
	other.Digest = digest2
	res := applyBatch(t, s, claimP("k"), claimP("k"), other)
	checkItems(t, res, []wantItem{{outcome: store.Acquired}, {outcome: store.InProgress}, {err: store.ErrDigestMismatch}})
	if t.Failed() {
		return
	}
	wantSame(t, "second claim of a key in one batch", res[1].Record, res[0].Record)
	held := res[0].Record

	res = applyBatch(t, s, completeP(held, []byte("one")), completeP(held, []byte("one")),
		completeP(held, []byte("two")), claimP("k"))
	checkItems(t, res, []wantItem{{}, {}, {err: store.ErrAlreadyFinished}, {outcome: store.AlreadyCompleted}})
	if t.Failed() {
		return
	}
	wantSame(t, "repeated Complete in one batch", res[1].Record, res[0].Record)
	wantSame(t, "claim after Complete in one batch", res[3].Record, res[0].Record)
	wantUnchanged(t, s, res[0].Record)
}

func testBatchLookup(t *testing.T, s store.Store) {
	held := acquire(t, s, claimP("held"))
	done := complete(t, s, completeP(acquire(t, s, claimP("done")), binary(300)))
	short := claimP("gone")
	short.Policy = shortPolicy()
	short.LeaseTTL = shortTTL
	acquire(t, s, short)
	sleepPast(2 * shortTTL)

	res := s.LookupBatch(t.Context(), store.LookupBatchParams{Consumer: consumer,
		Keys: []string{"done", "absent", "held", "gone", "done"}})
	if len(res) != 5 {
		t.Fatalf("LookupBatch of 5 keys returned %d results", len(res))
	}
	for i, want := range []*store.Record{&done, nil, &held, nil, &done} {
		if want == nil {
			if !errors.Is(res[i].Err, store.ErrNotFound) {
				t.Errorf("key %d: %+v, %v; want ErrNotFound", i, res[i].Record, res[i].Err)
			}
			continue
		}
		if res[i].Err != nil {
			t.Errorf("key %d: %v", i, res[i].Err)
			continue
		}
		wantSame(t, fmt.Sprintf("key %d", i), res[i].Record, *want)
	}
	other := s.LookupBatch(t.Context(), store.LookupBatchParams{Consumer: "other", Keys: []string{"done"}})
	if len(other) != 1 || !errors.Is(other[0].Err, store.ErrNotFound) {
		t.Errorf("LookupBatch of another consumer's key: %+v, want ErrNotFound", other)
	}
}

func testBatchEmpty(t *testing.T, s store.Store) {
	if res := s.ApplyBatch(t.Context(), store.BatchParams{}); len(res) != 0 {
		t.Errorf("empty ApplyBatch: %d results", len(res))
	}
	if res := s.LookupBatch(t.Context(), store.LookupBatchParams{Consumer: consumer}); len(res) != 0 {
		t.Errorf("empty LookupBatch: %d results", len(res))
	}
}

// A batch larger than any store's chunk, naming each key three times (the
// repeats far apart, in other chunks): each key acquired once, then twice
// IN_PROGRESS behind that claim.
func testBatchManyChunks(t *testing.T, s store.Store) {
	const keys = 700
	var cmds []store.Command
	for range 3 {
		for k := range keys {
			cmds = append(cmds, claimP(fmt.Sprintf("key-%04d", k)))
		}
	}
	res := applyBatch(t, s, cmds...)
	for i, r := range res {
		want := store.InProgress
		if i < keys {
			want = store.Acquired
		}
		if r.Err != nil || r.Outcome != want {
			t.Fatalf("item %d: %v, %v; want %v", i, r.Outcome, r.Err, want)
		}
		if i >= keys {
			wantSame(t, fmt.Sprintf("item %d", i), r.Record, res[i%keys].Record)
		}
	}
	looked := s.LookupBatch(t.Context(), store.LookupBatchParams{Consumer: consumer, Keys: []string{"key-0000", "key-0699"}})
	for i, k := range []int{0, keys - 1} {
		if looked[i].Err != nil {
			t.Fatalf("LookupBatch: %v", looked[i].Err)
		}
		wantSame(t, "Lookup after the batch", looked[i].Record, res[k].Record)
	}
}

// A batch whose caller has already given up writes nothing, and each item
// gets the context's error, as its lone call would.
func testBatchCanceled(t *testing.T, s store.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := s.ApplyBatch(ctx, store.BatchParams{Commands: []store.Command{claimP("a"), claimP("b")}})
	for i, r := range res {
		if !errors.Is(r.Err, context.Canceled) {
			t.Errorf("item %d: %+v, want context.Canceled", i, r)
		}
	}
	wantNotFound(t, s, consumer, "a")
	wantNotFound(t, s, consumer, "b")
}
