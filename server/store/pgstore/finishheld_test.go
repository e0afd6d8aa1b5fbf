package pgstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// A holder's finish on time is one statement, the guarded UPDATE, and
// stores what it answers; a finish the guard refuses (a stale token, a
// finished key, an expired record) is decided by reading, with Apply's
// answer.
func TestHolderFinishIsOneStatement(t *testing.T) {
	var log statementLog
	s := newTracedStore(t, &log)
	ctx := context.Background()
	finishes := []struct {
		name string
		cmd  func(token int64) store.Command
	}{
		{"complete", func(tok int64) store.Command { return completeParams("held-c", tok, "r") }},
		{"reject", func(tok int64) store.Command {
			return store.RejectParams{Consumer: "billing", Key: "held-r", FencingToken: tok, Policy: policy,
				Rejection: store.Rejection{Reason: "NO", Message: "m", Detail: []byte{0}}}
		}},
		{"release", func(tok int64) store.Command {
			return store.RejectParams{Consumer: "billing", Key: "held-x", FencingToken: tok, Policy: policy,
				Rejection: store.Rejection{Reason: "LATER", Retryable: true}}
		}},
	}
	for _, f := range finishes {
		_, key := store.KeyOf(f.cmd(0))
		claimed, err := s.Claim(ctx, claimParams(key))
		if err != nil {
			t.Fatal(err)
		}
		log.take()
		if _, err := s.Apply(ctx, f.cmd(claimed.Record.FencingToken+1)); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s with a stale token: %v, want ErrLeaseLost", f.name, err)
		}
		log.take()
		d, err := s.Apply(ctx, f.cmd(claimed.Record.FencingToken))
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		if sqls := log.take(); len(sqls) != 1 || !strings.Contains(sqls[0], "r.fencing_token = u.token") {
			t.Errorf("%s sent %q, want the one guarded UPDATE", f.name, sqls)
		}
		// Apply on the claimed record at the clock the write took is the
		// oracle: the same record, but for the columns the finish sets.
		want, _ := store.Apply(&claimed.Record, f.cmd(claimed.Record.FencingToken), d.Record.UpdatedAt)
		if !reflect.DeepEqual(d.Record, want.Record) {
			t.Errorf("%s answered %+v; Apply decides %+v", f.name, d.Record, want.Record)
		}
		if got, err := s.Lookup(ctx, "billing", key); err != nil || !reflect.DeepEqual(got, d.Record) {
			t.Errorf("%s stored %+v (%v), answered %+v", f.name, got, err, d.Record)
		}
	}

	// A record past its ExpiresAt counts as absent, though its row is not
	// reaped yet: the guard must not match it.
	short := policy
	short.ReleasedTTL = time.Millisecond
	p := claimParams("expires")
	p.Policy, p.LeaseTTL = short, time.Millisecond
	claimed, err := s.Claim(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := s.Lookup(ctx, "billing", "expires"); errors.Is(err, store.ErrNotFound) {
			break
		}
	}
	if _, err := s.Complete(ctx, completeParams("expires", claimed.Record.FencingToken, "late")); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a Complete of an expired record: %v, want ErrLeaseLost", err)
	}
}

// The guarded UPDATE must find each row by its primary key, even where a
// consumer has many keys pending and the partial index of pending leases
// looks cheaper to the planner: that index is ordered by lease, not key,
// so a probe of it scans the consumer's whole pending set.
func TestHeldFinishProbesThePrimaryKey(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	pool := pgstore.Pool(s)
	growPending(t, pool, 24000)
	// No ANALYZE: autovacuum may not have run (it is off on this
	// machine), and without statistics the planner took the partial index.
	for _, n := range []int{1, 32} {
		finishes := make([]store.Command, n)
		for i := range finishes {
			finishes[i] = store.CompleteParams{Consumer: "billing", Key: fmt.Sprintf("grown-%d", i*500+1),
				FencingToken: 1, Result: []byte("ok"), Policy: policy}
		}
		var plan []struct{ Plan planNode } // EXPLAIN plans the UPDATE without running it
		args := append([]any{pgx.QueryExecModeExec}, pgstore.FinishHeldArgs(finishes)...)
		if err := pool.QueryRow(ctx, `EXPLAIN (FORMAT JSON) `+pgstore.FinishHeldSQL, args...).Scan(&plan); err != nil {
			t.Fatal(err)
		}
		checkOnePrimaryKeyProbe(t, fmt.Sprintf("the held finish of %d rows", n), plan[0].Plan)
	}
}
