package sqlitestore

import (
	"context"

	"github.com/dedupd/dedupd/migrations"
)

// AppliedMigrations exposes, to the external tests, the migrations that
// Open ran.
func AppliedMigrations(s *Store) []migrations.Migration { return s.applied }

// WriterSynchronous reads SQLite's synchronous setting on the write
// connection (0 OFF, 1 NORMAL, 2 FULL); callers must not write meanwhile.
func WriterSynchronous(s *Store) (int, error) {
	var v int
	err := s.w.conn.QueryRowContext(context.Background(), "PRAGMA synchronous").Scan(&v)
	return v, err
}
