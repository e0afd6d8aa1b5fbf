package sqlitestore_test

import (
	"context"
	"testing"

	"github.com/dedupd/dedupd/server/store/internal/sqlreadtest"
	"github.com/dedupd/dedupd/server/store/internal/sqlstmt"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// TestReadRulesOracle holds the statements of ListRecords, CountPurge,
// PurgeBatch, Stats and ClaimParked's choice of stream to the pure rules of
// package store, on rows at every clock boundary (see sqlreadtest).
func TestReadRulesOracle(t *testing.T) {
	s := newStore(t)
	exec := func(ctx context.Context, sql string, args ...any) error {
		return sqlitestore.Exec(s, ctx, sql, args...)
	}
	sqlreadtest.Run(t, sqlreadtest.Backend[*sqlitestore.Store]{Store: s, Dialect: sqlstmt.SQLite, Exec: exec, Reads: sqlitestore.StoppedReads})
}
