package pgstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/server/store/pgstore"
)

// On PostgreSQL the CockroachDB-only migrations are refused after one
// read-only query, with a message that names the database found.
func TestCockroachDBTTLRefusedOnPostgres(t *testing.T) {
	var log statementLog
	s := newTracedStore(t, &log)
	log.take()
	applied, err := s.MigrateCockroachDBTTL(context.Background())
	if !errors.Is(err, pgstore.ErrNotCockroachDB) || len(applied) != 0 {
		t.Fatalf("MigrateCockroachDBTTL on PostgreSQL = %v, %v; want ErrNotCockroachDB", applied, err)
	}
	if !strings.Contains(err.Error(), `reports "PostgreSQL `) {
		t.Errorf("error %q does not name the database found", err)
	}
	if sqls := log.take(); !slices.Equal(sqls, []string{"SELECT version()"}) {
		t.Errorf("statements sent: %q; want only SELECT version()", sqls)
	}
	if pending, err := s.PendingMigrations(context.Background()); err != nil || len(pending) != 0 {
		t.Errorf("PendingMigrations after the refusal = %v, %v", pending, err)
	}
}
