package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/dedupd/dedupd/migrations"
)

// ErrNotCockroachDB is returned by MigrateCockroachDBTTL on any other
// database, PostgreSQL included.
var ErrNotCockroachDB = errors.New("database is not CockroachDB")

// serverVersion returns the database's SELECT version(), which on
// CockroachDB starts "CockroachDB CCL v23.2.0 ..." and on PostgreSQL
// "PostgreSQL 15.6 ...".
func (s *Store) serverVersion(ctx context.Context) (string, error) {
	var v string
	err := s.withRetry(ctx, "server version", func(ctx context.Context) error {
		return s.pool.QueryRow(ctx, "SELECT version()").Scan(&v)
	})
	return v, err
}

// MigrateCockroachDBTTL applies the optional CockroachDB-only migrations
// (row-level TTL on expires_at, a hash-sharded expiry index) that the
// database lacks, and returns them. It refuses, changing nothing, with an
// error matching ErrNotCockroachDB on any other database, and requires the
// portable migrations to be applied first, since it alters their table.
func (s *Store) MigrateCockroachDBTTL(ctx context.Context) ([]migrations.Migration, error) {
	if err := s.CheckCockroachDB(ctx); err != nil {
		return nil, err
	}
	pending, err := s.PendingMigrations(ctx)
	if err != nil {
		return nil, err
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("pgstore: the schema lacks %s; run the portable migrations first", pending[0])
	}
	all, err := migrations.Load(migrations.CockroachDBTTL)
	if err != nil {
		return nil, err
	}
	return s.migrateUp(ctx, "migrate cockroachdb ttl", all)
}

// CheckCockroachDB returns an error matching ErrNotCockroachDB, naming the
// database found, unless the database is CockroachDB.
func (s *Store) CheckCockroachDB(ctx context.Context) error {
	v, err := s.serverVersion(ctx)
	if err != nil {
		return err
	}
	if !isCockroachDB(v) {
		return fmt.Errorf("%w: row-level TTL is a CockroachDB feature; this database reports %q (PostgreSQL keeps the reaper)",
			ErrNotCockroachDB, firstWords(v, 2))
	}
	return nil
}

func isCockroachDB(version string) bool { return strings.HasPrefix(version, "CockroachDB") }

// firstWords keeps an error message to the product and its version.
func firstWords(s string, n int) string {
	words := strings.Fields(s)
	return strings.Join(words[:min(n, len(words))], " ")
}
