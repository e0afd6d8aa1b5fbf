package sqlitestore

import "github.com/dedupd/dedupd/migrations"

// AppliedMigrations exposes, to the external tests, the migrations that
// Open ran.
func AppliedMigrations(s *Store) []migrations.Migration { return s.applied }
