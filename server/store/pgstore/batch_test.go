package pgstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// A batch of fresh keys (a first delivery) is one statement, the insert;
// a batch of pending keys (their Completes) is a read and a multi-row
// write; a batch of finished keys (a redelivery) the insert, finding every
// key taken, and the read.
func TestBatchStatements(t *testing.T) {
	var log statementLog
	s, err := pgstore.OpenTraced(context.Background(), pgtest.URL(t), pgstore.Options{}, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	migrated(t, s)
	const n = 100
	claims := make([]store.Command, n)
	for i := range claims {
		claims[i] = claimParams(fmt.Sprintf("key-%03d", n-i)) // not in key order
	}
	log.take()
	fresh := s.ApplyBatch(t.Context(), store.BatchParams{Commands: claims})
	wantStatements(t, "a batch of fresh claims", log.take(), 1)

	completes := make([]store.Command, n)
	for i, r := range fresh {
		if r.Err != nil || r.Outcome != store.Acquired {
			t.Fatalf("fresh claim %d: %v, %v", i, r.Outcome, r.Err)
		}
		completes[i] = store.CompleteParams{Consumer: r.Record.Consumer, Key: r.Record.Key,
			FencingToken: r.Record.FencingToken, Result: []byte("ok"), Policy: policy}
	}
	for i, r := range s.ApplyBatch(t.Context(), store.BatchParams{Commands: completes}) {
		if r.Err != nil || r.Record.State != store.Completed {
			t.Fatalf("complete %d: %+v", i, r)
		}
	}
	wantStatements(t, "a batch of completes", log.take(), 2)

	for i, r := range s.ApplyBatch(t.Context(), store.BatchParams{Commands: claims}) {
		if r.Err != nil || r.Outcome != store.AlreadyCompleted {
			t.Fatalf("redelivered claim %d: %v, %v", i, r.Outcome, r.Err)
		}
	}
	wantStatements(t, "a redelivered batch", log.take(), 2)
}

// isolation returns the isolation the pool's connections start their
// transactions at: "read committed" by default, "serializable" when the
// run sets PGOPTIONS="-c default_transaction_isolation=serializable" (as
// CI's second run does, for CockroachDB's isolation).
func isolation(t *testing.T, pool *pgxpool.Pool) string {
	t.Helper()
	var level string
	if err := pool.QueryRow(context.Background(), `SHOW default_transaction_isolation`).Scan(&level); err != nil {
		t.Fatal(err)
	}
	return level
}

func wantStatements(t *testing.T, what string, sqls []string, want int) {
	t.Helper()
	if len(sqls) != want {
		t.Errorf("%s sent %d statements, want %d:\n%q", what, len(sqls), want, sqls)
	}
}
