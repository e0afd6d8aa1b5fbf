package pgstore

import (
	"slices"
	"testing"

	"github.com/dedupd/dedupd/migrations"
)

// PostgreSQL gets the PostgreSQL-only migrations (the "C" collation of the
// key columns); CockroachDB never does.
func TestDialectsOf(t *testing.T) {
	for version, want := range map[string][]migrations.Dialect{
		"PostgreSQL 15.6 on x86_64-pc-linux-gnu":        {migrations.Postgres, migrations.PostgresOnly},
		"CockroachDB CCL v23.2.0 (x86_64-pc-linux-gnu)": {migrations.Postgres},
	} {
		if got := dialectsOf(version); !slices.Equal(got, want) {
			t.Errorf("dialectsOf(%q) = %v, want %v", version, got, want)
		}
	}
}
