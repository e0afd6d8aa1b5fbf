package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// answer is what a claim returned, without the times the database chose, so
// that answers from two stores can be compared.
type answer struct {
	outcome  store.Outcome
	token    int64
	attempts int64
	state    store.State
	err      string
}

func answerOf(res store.ClaimResult, err error) answer {
	if err != nil {
		if conflict, ok := errors.AsType[*store.ConflictError](err); ok {
			return answer{err: conflict.Err.Error(), token: conflict.Record.FencingToken, state: conflict.Record.State}
		}
		return answer{err: err.Error()}
	}
	r := res.Record
	return answer{outcome: res.Outcome, token: r.FencingToken, attempts: r.Attempts, state: r.State}
}

// seedBatchKeys gives a store a pending key and a completed one.
func seedBatchKeys(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Claim(ctx, claimParams("pending")); err != nil {
		t.Fatal(err)
	}
	res, err := s.Claim(ctx, claimParams("done"))
	if err == nil {
		_, err = s.Complete(ctx, store.CompleteParams{Consumer: "billing", Key: "done",
			FencingToken: res.Record.FencingToken, Result: []byte("ok"), Policy: policy})
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A batch answers every caller as the same claims made one at a time, in
// batch order, would be answered: a key named twice is acquired once, a
// different digest is refused with the batch-mate's record, existing keys
// take the ordinary path, and a caller who gave up writes nothing.
func TestGroupCommitBatchAnswersAsOneAtATime(t *testing.T) {
	otherDigest := claimParams("a")
	otherDigest.Digest = []byte("other")
	claims := []store.ClaimParams{
		claimParams("a"), claimParams("a"), otherDigest, claimParams("pending"),
		claimParams("done"), claimParams("b"), claimParams("cancelled"), claimParams("b"),
	}
	const cancelled = 6

	var log statementLog
	batched := newTracedStore(t, &log)
	seedBatchKeys(t, batched)
	log.take()
	ctxs := make([]context.Context, len(claims))
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	ctxs[cancelled] = gone
	results, errs := pgstore.ClaimBatch(batched, ctxs, claims)

	inserts := 0
	for _, sql := range log.take() {
		if strings.HasPrefix(sql, "INSERT") {
			inserts++
			if !strings.Contains(sql, "unnest") {
				t.Errorf("batch insert is not the multi-row statement: %s", sql)
			}
		}
	}
	if inserts != 1 {
		t.Errorf("batch sent %d INSERTs, want 1", inserts)
	}

	alone := newStoreWith(t, pgstore.Options{MaxBatch: 1})
	seedBatchKeys(t, alone)
	for i, p := range claims {
		got := answerOf(results[i], errs[i])
		if i == cancelled {
			if !errors.Is(errs[i], context.Canceled) {
				t.Errorf("cancelled caller got %+v, want context.Canceled", got)
			}
			continue
		}
		want := answerOf(alone.Claim(context.Background(), p))
		if got != want {
			t.Errorf("claim %d (%s): batched %+v, alone %+v", i, p.Key, got, want)
		}
	}
	if _, err := batched.Lookup(context.Background(), "billing", "cancelled"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancelled caller's key: Lookup = %v, want ErrNotFound", err)
	}
}

// Many callers through the real batching path, on a few shared keys mixed
// with fresh ones and with callers who gave up before calling: each shared
// key is acquired exactly once, every fresh key is acquired, and nothing of
// a caller who gave up is written.
func TestGroupCommitRace(t *testing.T) {
	s := newStore(t)
	const (
		callers = 32
		rounds  = 8
		shared  = 3
	)
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	var acquired [shared]atomic.Int32
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for r := range rounds {
				key := fmt.Sprintf("fresh-%d-%d", c, r)
				ctx := context.Background()
				switch (c + r) % 4 {
				case 0:
					key = fmt.Sprintf("shared-%d", (c+r)%shared)
				case 1:
					key, ctx = "gone-"+key, gone
				case 2:
					// Gives up at some point of its claim: queued, leading,
					// or in a statement.
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Duration(rand.N(2000))*time.Microsecond)
					defer cancel()
					key = "hasty-" + key
				}
				res, err := s.Claim(ctx, claimParams(key))
				switch {
				case strings.HasPrefix(key, "hasty-"):
					if err != nil && !errors.Is(err, context.DeadlineExceeded) || err == nil && res.Outcome != store.Acquired {
						t.Errorf("claim %s that gave up: %v, %v", key, res.Outcome, err)
					}
				case ctx == gone:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("claim with a cancelled context: %v, %v", res.Outcome, err)
					}
				case err != nil:
					t.Errorf("claim %s: %v", key, err)
				case strings.HasPrefix(key, "shared-"):
					if res.Outcome == store.Acquired {
						acquired[(c+r)%shared].Add(1)
					} else if res.Outcome != store.InProgress {
						t.Errorf("claim %s: %v", key, res.Outcome)
					}
				case res.Outcome != store.Acquired || res.Record.FencingToken != 1:
					t.Errorf("fresh claim %s: %v token %d", key, res.Outcome, res.Record.FencingToken)
				}
			}
		})
	}
	wg.Wait()
	// Nobody who gave up left the batches without a leader.
	if res, err := s.Claim(context.Background(), claimParams("after")); err != nil || res.Outcome != store.Acquired {
		t.Errorf("claim after the race: %v, %v", res.Outcome, err)
	}
	for i := range acquired {
		if n := acquired[i].Load(); n != 1 {
			t.Errorf("shared-%d acquired %d times, want once", i, n)
		}
	}
	for c := range callers {
		for r := range rounds {
			if (c+r)%4 != 1 {
				continue
			}
			key := fmt.Sprintf("gone-fresh-%d-%d", c, r)
			if _, err := s.Lookup(context.Background(), "billing", key); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s was claimed by a caller who gave up: Lookup = %v", key, err)
			}
		}
	}
}

// finishAnswer is what a finishing call returned, without the times.
func finishAnswer(rec store.Record, err error) answer {
	if err != nil {
		return answerOf(store.ClaimResult{}, err)
	}
	a := answer{token: rec.FencingToken, attempts: rec.Attempts, state: rec.State}
	if rec.Rejection != nil {
		a.err = "rejection " + rec.Rejection.Reason
	}
	if rec.Result != nil {
		a.err += " result " + string(rec.Result)
	}
	return a
}

// seedFinishKeys claims keys p1..p4 (token 1 each) and completes "done".
func seedFinishKeys(t *testing.T, s store.Store) {
	t.Helper()
	for _, key := range []string{"p1", "p2", "p3", "p4", "done"} {
		if _, err := s.Claim(context.Background(), claimParams(key)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Complete(context.Background(), completeParams("done", 1, "stored")); err != nil {
		t.Fatal(err)
	}
}

func completeParams(key string, token int64, result string) store.CompleteParams {
	return store.CompleteParams{Consumer: "billing", Key: key, FencingToken: token, Result: []byte(result), Policy: policy}
}

// A batch of Completes, Rejects and ExtendLeases answers each as the same
// calls made one at a time, in batch order: the first write to a key wins
// and the rest of the batch sees it, stale tokens and finished keys are
// refused, and what is stored is what was answered.
func TestGroupCommitFinishesAnswerAsOneAtATime(t *testing.T) {
	reject := func(key string, token int64, retryable bool) store.RejectParams {
		return store.RejectParams{Consumer: "billing", Key: key, FencingToken: token, Policy: policy,
			Rejection: store.Rejection{Reason: "NO", Detail: []byte{1}, Retryable: retryable}}
	}
	cmds := []store.Command{
		completeParams("p1", 1, "r1"),
		completeParams("p1", 1, "other"), // same key, later in the batch
		reject("p2", 1, false),
		store.ExtendLeaseParams{Consumer: "billing", Key: "p3", FencingToken: 1, LeaseTTL: time.Hour, Policy: policy},
		completeParams("p4", 2, "stale token"),
		reject("p4", 1, true),
		completeParams("done", 1, "stored"), // a repeat: no write
		completeParams("done", 1, "different"),
		completeParams("absent", 1, "r"),
	}
	var log statementLog
	batched := newTracedStore(t, &log)
	seedFinishKeys(t, batched)
	log.take()
	recs, errs := pgstore.FinishBatch(batched, cmds)
	// The holders' finishes (p1, p2) in one guarded UPDATE; the rest of
	// the batch in one read and one write (p3's ExtendLease). Only the keys
	// named twice take the ordinary path: p1's second Complete is refused
	// after a read, p4's Reject (after a refused Complete) is written on
	// its own.
	var updates, batchUpdates int
	sqls := log.take()
	for _, sql := range sqls {
		if strings.HasPrefix(sql, "UPDATE") {
			updates++
			if strings.Contains(sql, "unnest") {
				batchUpdates++
			}
		}
	}
	if updates != 3 || batchUpdates != 2 {
		t.Errorf("batch sent %d UPDATEs (%d multi-row), want two multi-row UPDATEs and one single: %q", updates, batchUpdates, sqls)
	}

	alone := newStoreWith(t, pgstore.Options{MaxBatch: 1})
	seedFinishKeys(t, alone)
	ctx := context.Background()
	for i, cmd := range cmds {
		d, err := alone.Apply(ctx, cmd) // the typed finish calls are Apply's record
		if got, want := finishAnswer(recs[i], errs[i]), finishAnswer(d.Record, err); got != want {
			t.Errorf("call %d (%T): batched %+v, alone %+v", i, cmd, got, want)
		}
	}
	for _, key := range []string{"p1", "p2", "p3", "p4", "done"} {
		got, err := batched.Lookup(ctx, "billing", key)
		want, errA := alone.Lookup(ctx, "billing", key)
		if finishAnswer(got, err) != finishAnswer(want, errA) {
			t.Errorf("%s stored: batched %+v, alone %+v", key, got, want)
		}
		if i := slices.IndexFunc(cmds, func(c store.Command) bool { _, k := store.KeyOf(c); return k == key }); i >= 0 && errs[i] == nil &&
			!reflect.DeepEqual(got, recs[i]) && key != "p1" {
			t.Errorf("%s: the batch answered %+v but stored %+v", key, recs[i], got)
		}
	}
}

// A caller that cancels (with no deadline) while its call waits on the
// database gets context.Canceled at once, as it would without group
// commit: the batch it leads stops waiting once no caller wants it.
func TestGroupCommitCancelWhileWaitingOnLock(t *testing.T) {
	tests := []struct {
		name string
		// hold takes, in tx, the lock the call will wait on.
		hold func(ctx context.Context, tx pgx.Tx) error
		call func(ctx context.Context, s *pgstore.Store) error
	}{
		{
			name: "fresh claim",
			hold: func(ctx context.Context, tx pgx.Tx) error {
				// An uncommitted row: the claim's INSERT ... ON CONFLICT
				// waits to see whether it commits.
				_, err := tx.Exec(ctx, `INSERT INTO dedup_records (consumer, key, state, digest, fencing_token,
    attempts, owner, created_at, updated_at, lease_expires_at, expires_at)
VALUES ('billing', 'k', 'PENDING', '', 1, 1, 'other', now(), now(), now() + INTERVAL '1 hour', now() + INTERVAL '2 hours')`)
				return err
			},
			call: func(ctx context.Context, s *pgstore.Store) error {
				_, err := s.Claim(ctx, claimParams("k"))
				return err
			},
		},
		{
			name: "complete",
			hold: func(ctx context.Context, tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "SELECT 1 FROM dedup_records WHERE key = 'k' FOR UPDATE")
				return err
			},
			call: func(ctx context.Context, s *pgstore.Store) error {
				_, err := s.Complete(ctx, completeParams("k", 1, "r"))
				return err
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			url := pgtest.URL(t)
			s, err := pgstore.Open(ctx, url, pgstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			migrated(t, s)
			if tt.name == "complete" {
				if _, err := s.Claim(ctx, claimParams("k")); err != nil {
					t.Fatal(err)
				}
			}

			tx := lockHolder(t, ctx, url)
			if err := tt.hold(ctx, tx); err != nil {
				t.Fatal(err)
			}

			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- tt.call(callCtx, s) }()
			waitUntilBlockedBy(t, tx)
			cancel()
			// Not a speed check: without a bound, a call that never
			// returns would only show as the test binary's timeout.
			select {
			case err := <-done:
				if !errors.Is(err, context.Canceled) {
					t.Errorf("cancelled call returned %v; want context.Canceled", err)
				}
			case <-time.After(time.Minute):
				t.Fatal("the cancelled call is still waiting on the database")
			}

		})
	}
}

// waitUntilBlockedBy waits until some backend waits on a lock that tx holds.
func waitUntilBlockedBy(t *testing.T, tx pgx.Tx) {
	t.Helper()
	for {
		var n int
		err := tx.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE pg_backend_pid() = ANY (pg_blocking_pids(pid))").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// When a batch's write fails, only the calls that needed it get the error.
// A call the read alone answered (here a stale token) keeps that answer,
// as it would alone, where its read-modify-write stops after the read.
func TestGroupCommitFailedWriteKeepsReadAnswers(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	// The batch's UPDATE fails on the row lock below instead of waiting.
	s, err := pgstore.Open(ctx, url+"&lock_timeout=50", pgstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	migrated(t, s)
	seedFinishKeys(t, s)

	tx := lockHolder(t, ctx, url)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM dedup_records WHERE key = 'p1' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	_, errs := pgstore.FinishBatch(s, []store.Command{
		completeParams("p1", 1, "r1"),
		completeParams("p2", 2, "stale token"),
	})
	if !errors.Is(errs[0], store.ErrUnavailable) {
		t.Errorf("the locked write: %v; want ErrUnavailable", errs[0])
	}
	var conflict *store.ConflictError
	if !errors.As(errs[1], &conflict) || !errors.Is(errs[1], store.ErrLeaseLost) || conflict.Record.FencingToken != 1 {
		t.Errorf("the stale token: %v; want ErrLeaseLost with the record of token 1", errs[1])
	}
}

// Two batches in flight whose keys overlap, named in opposite orders, must
// queue behind each other, not deadlock: each waits on the other's
// uncommitted rows unless both take the keys in one order.
func TestGroupCommitOverlappingBatchesDoNotDeadlock(t *testing.T) {
	var log statementLog
	s := newTracedStore(t, &log)
	for round := range 30 {
		forward := make([]store.ClaimParams, 16)
		for i := range forward {
			forward[i] = claimParams(fmt.Sprintf("r%d-k%02d", round, i))
		}
		backward := slices.Clone(forward)
		slices.Reverse(backward)
		ctxs := make([]context.Context, len(forward))
		for i := range ctxs {
			ctxs[i] = context.Background()
		}
		var wg sync.WaitGroup
		acquired := make([]atomic.Int64, len(forward))
		for _, batch := range [][]store.ClaimParams{forward, backward} {
			wg.Go(func() {
				results, errs := pgstore.ClaimBatch(s, ctxs, batch)
				for i, err := range errs {
					if err != nil {
						t.Errorf("round %d, key %s: %v", round, batch[i].Key, err)
						continue
					}
					if results[i].Outcome == store.Acquired {
						var n int
						if _, err := fmt.Sscanf(batch[i].Key[len(batch[i].Key)-2:], "%d", &n); err != nil {
							t.Error(err)
						}
						acquired[n].Add(1)
					}
				}
			})
		}
		wg.Wait()
		for i := range acquired {
			if got := acquired[i].Load(); got != 1 {
				t.Fatalf("round %d: key %d acquired %d times, want once", round, i, got)
			}
		}
		log.take()
	}
}
