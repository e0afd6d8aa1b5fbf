package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

func claimOn(stream string, seq int64, owner string) store.ClaimStreamParams {
	return store.ClaimStreamParams{Consumer: "billing", Stream: stream, Sequence: seq, Owner: owner, Policy: streamPolicy}
}

func completeOn(stream string, seq, token int64) store.CompleteStreamParams {
	return store.CompleteStreamParams{Consumer: "billing", Stream: stream, Sequence: seq, FencingToken: token, Policy: streamPolicy}
}

func extendOn(stream string, seq, token int64) store.ExtendStreamLeaseParams {
	return store.ExtendStreamLeaseParams{Consumer: "billing", Stream: stream, Sequence: seq, FencingToken: token,
		LeaseTTL: 2 * time.Minute, Policy: streamPolicy}
}

// streamState is a stream without the times the database chose, so that a
// store's rows and the model's compare.
func streamState(st store.Stream) store.Stream {
	st.LeaseExpiresAt, st.CreatedAt, st.UpdatedAt, st.ExpiresAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if len(st.Digest) == 0 {
		st.Digest = nil
	}
	if st.LastSkipped != nil {
		r := *st.LastSkipped
		r.At = time.Time{}
		st.LastSkipped = &r
	}
	return st
}

// streamAnswer is what a stream command returned, without the times.
type streamAnswer struct {
	outcome store.StreamOutcome
	stream  store.Stream
	err     string
}

func streamAnswerOf(d store.StreamDecision, err error) streamAnswer {
	if err != nil {
		return streamAnswer{err: err.Error()}
	}
	return streamAnswer{outcome: d.Outcome, stream: streamState(d.Stream)}
}

// A batch of stream writes answers and stores what store.ApplyStream
// applied one command at a time, in batch order, says (the model, on the
// rows as stored when the batch's statements run): streams written
// read-free as planned, new ones inserted, a stream named twice written
// once in the batch and once after, a stream whose remembered row is
// stale, rows another store changes between the plans and the
// statements, and a command with no plan after the batch.
func TestStreamBatchIsApplyStreamOneByOne(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	var log statementLog
	a, err := pgstore.OpenTraced(ctx, url, pgstore.Options{}, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	migrated(t, a)
	b := openStore(t, url)
	for _, s := range []string{"s1", "s2", "s3", "s4", "s5"} {
		mustClaimStream(t, ctx, a, claimOn(s, 1, "a")) // token 1 each, remembered by a
	}
	mustFinish(t)(a.CompleteStream(ctx, completeOn("s5", 1, 1)))
	// s3's row in a's memory goes stale before the batch is planned.
	mustFinish(t)(b.CompleteStream(ctx, completeOn("s3", 1, 1)))
	mustClaimStream(t, ctx, b, claimOn("s3", 2, "b"))
	changedUnder := func() {
		mustStream(t)(b.ExtendStreamLease(ctx, extendOn("s4", 1, 1)))
		mustClaimStream(t, ctx, b, claimOn("n3", 1, "b"))
		mustClaimStream(t, ctx, b, claimOn("s5", 2, "b"))
	}
	cmds := []store.StreamCommand{
		completeOn("s1", 1, 1), // remembered: an update that lands
		claimOn("n1", 1, "a"),  // new: an insert
		claimOn("n2", 1, "a"),
		extendOn("s2", 1, 1),
		extendOn("s2", 1, 1),   // s2 again: after the batch
		completeOn("s3", 1, 1), // stale memory: decided on the row as stored
		completeOn("s4", 1, 1), // changed under the batch, still lands
		claimOn("n3", 1, "a"),  // inserted by b under the batch
		claimOn("s5", 2, "a"),  // claimed by b under the batch
		claimOn("n1", 1, "a"),  // n1 again
		completeOn("n2", 1, 1), // no plan (n2 unknown to a): after the batch
	}
	streams := []string{"s1", "s2", "s3", "s4", "s5", "n1", "n2", "n3"}
	model := map[string]*store.Stream{}
	between := func() {
		changedUnder()
		for _, s := range streams {
			st, err := b.GetStream(ctx, "billing", s)
			switch {
			case errors.Is(err, store.ErrNotFound):
				model[s] = nil
			case err != nil:
				t.Fatal(err)
			default:
				model[s] = &st
			}
		}
		log.take()
	}
	ds, errs := pgstore.StreamBatch(a, cmds, between)
	if n := streamStatements(log.take()); n >= len(cmds) {
		t.Errorf("the batch of %d commands sent %d statements, want fewer", len(cmds), n)
	}
	for i, cmd := range cmds {
		k := streamKeyOf(cmd)
		want, wantErr := store.ApplyStream(model[k], cmd, time.Now())
		if wantErr == nil && want.Write {
			st := want.Stream
			model[k] = &st
		}
		if got, w := streamAnswerOf(ds[i], errs[i]), streamAnswerOf(want, wantErr); !reflect.DeepEqual(got, w) {
			t.Errorf("command %d (%T on %s):\n got  %+v\n want %+v", i, cmd, k, got, w)
		}
	}
	for _, s := range streams {
		got, err := b.GetStream(ctx, "billing", s)
		if err != nil || model[s] == nil {
			t.Fatalf("stored %s: %v (model %v)", s, err, model[s])
		}
		if !reflect.DeepEqual(streamState(got), streamState(*model[s])) {
			t.Errorf("stored %s:\n got  %+v\n want %+v", s, streamState(got), streamState(*model[s]))
		}
	}
}

func streamKeyOf(cmd store.StreamCommand) string {
	switch p := cmd.(type) {
	case store.ClaimStreamParams:
		return p.Stream
	case store.CompleteStreamParams:
		return p.Stream
	case store.ExtendStreamLeaseParams:
		return p.Stream
	}
	panic(fmt.Sprintf("streamKeyOf(%T)", cmd))
}

// A batch of writes on distinct streams is one statement for the streams
// the store remembers and one for the new ones, whatever its size.
func TestStreamBatchStatements(t *testing.T) {
	ctx := context.Background()
	var log statementLog
	s := newTracedStore(t, &log)
	const n = 8
	var cmds []store.StreamCommand
	for i := range n {
		mustClaimStream(t, ctx, s, claimOn(fmt.Sprintf("old-%d", n-i), 1, "w")) // not in key order
		cmds = append(cmds, completeOn(fmt.Sprintf("old-%d", n-i), 1, 1), claimOn(fmt.Sprintf("new-%d", i), 1, "w"))
	}
	log.take()
	_, errs := pgstore.StreamBatch(s, cmds, nil)
	for i, err := range errs {
		if err != nil {
			t.Errorf("command %d: %v", i, err)
		}
	}
	if got := streamStatements(log.take()); got != 2 {
		t.Errorf("a batch of %d completes and %d new claims sent %d statements, want 2", n, n, got)
	}
	for i := range n {
		if st, err := s.GetStream(ctx, "billing", fmt.Sprintf("old-%d", i+1)); err != nil || st.HighWater != 1 || st.InFlight != 0 {
			t.Errorf("old-%d after its complete: %+v, %v", i+1, st, err)
		}
		if st, err := s.GetStream(ctx, "billing", fmt.Sprintf("new-%d", i)); err != nil || st.InFlight != 1 {
			t.Errorf("new-%d after its claim: %+v, %v", i, st, err)
		}
	}
}

// Concurrent writers, each on a stream of its own, share statements: N
// cycles cost fewer than 2N stream statements, every answer is the one a
// caller alone would get.
func TestStreamWritesShareStatements(t *testing.T) {
	ctx := context.Background()
	var log statementLog
	s := newTracedStore(t, &log)
	const callers, cycles = 16, 10
	log.take()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			stream := fmt.Sprintf("own-%d", c)
			for seq := int64(1); seq <= cycles; seq++ {
				st := mustClaimStream(t, ctx, s, claimOn(stream, seq, "w"))
				res, err := s.CompleteStream(ctx, completeOn(stream, seq, st.FencingToken))
				if err != nil || res.Stream.HighWater != seq || res.Stream.InFlight != 0 {
					t.Errorf("%s complete %d: %+v, %v", stream, seq, res.Stream, err)
				}
			}
		})
	}
	wg.Wait()
	if n := streamStatements(log.take()); n >= 2*callers*cycles {
		t.Errorf("%d stream writes sent %d statements, want fewer", 2*callers*cycles, n)
	}
}

// Writers on two stores race on shared streams, each claiming the next
// sequence and completing it when acquired: every sequence is acquired
// once and completed once, and each stream ends at the number completed.
func TestStreamGroupCommitRace(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	stores := []*pgstore.Store{migrated(t, openStore(t, url)), openStore(t, url)}
	const callers, rounds, shared = 16, 12, 3
	var (
		mu        sync.Mutex
		acquired  = map[string]int{}
		completed [shared]atomic.Int64
		wg        sync.WaitGroup
	)
	for c := range callers {
		wg.Go(func() {
			s := stores[c%len(stores)]
			for r := range rounds {
				i := (c + r) % shared
				stream := fmt.Sprintf("shared-%d", i)
				seq := int64(1)
				if st, err := s.GetStream(ctx, "billing", stream); err == nil {
					seq = st.HighWater + 1
				}
				owner := fmt.Sprintf("w%d", c)
				res, err := s.ClaimStream(ctx, claimOn(stream, seq, owner))
				if err != nil || res.Outcome != store.StreamAcquired {
					continue // taken, finished or not yet next: an answer, not a failure
				}
				mu.Lock()
				acquired[fmt.Sprintf("%s/%d", stream, seq)]++
				mu.Unlock()
				if _, err := s.CompleteStream(ctx, completeOn(stream, seq, res.Stream.FencingToken)); err != nil {
					t.Errorf("complete %s/%d by its holder: %v", stream, seq, err)
					continue
				}
				completed[i].Add(1)
			}
		})
	}
	wg.Wait()
	for k, n := range acquired {
		if n != 1 {
			t.Errorf("%s acquired %d times", k, n)
		}
	}
	for i := range shared {
		st, err := stores[0].GetStream(ctx, "billing", fmt.Sprintf("shared-%d", i))
		if err != nil || st.HighWater != completed[i].Load() || st.InFlight != 0 {
			t.Errorf("shared-%d: %+v, %v; want high water %d", i, st, err, completed[i].Load())
		}
	}
}
