package pgstore_test

import (
	"context"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store/internal/sqlreadtest"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// TestReadRulesOracle holds the statements of ListRecords, CountPurge,
// PurgeBatch, Stats and ClaimParked's choice of stream to the pure rules of
// package store, on rows at every clock boundary (see sqlreadtest).
func TestReadRulesOracle(t *testing.T) {
	s := migrated(t, openStore(t, pgtest.URL(t)))
	exec := func(ctx context.Context, sql string, args ...any) error {
		_, err := pgstore.Pool(s).Exec(ctx, sql, args...)
		return err
	}
	sqlreadtest.Run(t, sqlreadtest.Backend[*pgstore.Store]{Store: s, Dialect: sqlstmt.Postgres, Exec: exec, Reads: pgstore.StoppedReads})
}
