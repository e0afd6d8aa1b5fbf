package migrations

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadOrdersAndSplits(t *testing.T) {
	fsys := fstest.MapFS{
		"d/0002_second.sql": {Data: []byte("-- a comment;\nCREATE INDEX i ON t (a);\n")},
		"d/0001_first.sql":  {Data: []byte("CREATE TABLE t (\n  a TEXT -- why;\n);\n\nCREATE TABLE u (b TEXT);")},
		"d/README":          {Data: []byte("ignored")},
	}
	ms, err := load(fsys, "d")
	if err != nil {
		t.Fatal(err)
	}
	want := []Migration{
		{Version: 1, Name: "first", Statements: []string{"CREATE TABLE t (\n  a TEXT\n)", "CREATE TABLE u (b TEXT)"}},
		{Version: 2, Name: "second", Statements: []string{"CREATE INDEX i ON t (a)"}},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Fatalf("load = %#v\nwant %#v", ms, want)
	}
}

func TestLoadRefusesBadNames(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"no number":      {"d/first.sql": {}},
		"zero":           {"d/0000_x.sql": {}},
		"shared version": {"d/0001_a.sql": {}, "d/1_b.sql": {}},
	} {
		if _, err := load(fsys, "d"); err == nil {
			t.Errorf("%s: load accepted it", name)
		}
	}
}

func TestEmbeddedDialectsHaveTheSameSteps(t *testing.T) {
	pg, err := Load(Postgres)
	if err != nil {
		t.Fatal(err)
	}
	lite, err := Load(SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg) == 0 || len(pg) != len(lite) {
		t.Fatalf("postgres has %d migrations, sqlite %d; every step needs both", len(pg), len(lite))
	}
	for i := range pg {
		if pg[i].Version != lite[i].Version || pg[i].Name != lite[i].Name {
			t.Errorf("step %d: postgres %04d_%s, sqlite %04d_%s", i, pg[i].Version, pg[i].Name, lite[i].Version, lite[i].Name)
		}
	}
}

func TestMigrationStringIsItsFileName(t *testing.T) {
	if got := (Migration{Version: 7, Name: "ttl"}).String(); got != "0007_ttl" {
		t.Fatalf("String() = %q, want 0007_ttl", got)
	}
}

// The optional CockroachDB set loads, splits one DDL statement per
// statement, and cannot collide with the portable set's versions.
func TestCockroachDBTTLSet(t *testing.T) {
	ms, err := Load(CockroachDBTTL)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 4 || ms[0].String() != "1001_row_level_ttl" || ms[1].String() != "1002_drop_plain_expiry_index" ||
		ms[2].String() != "1014_streams_row_level_ttl" || ms[3].String() != "1015_streams_drop_plain_expiry_index" {
		t.Fatalf("cockroachdb set: %v, want 1001, 1002, then the streams' 1014, 1015", ms)
	}
	pg, err := Load(Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if last := pg[len(pg)-1].Version; last >= ms[0].Version {
		t.Fatalf("portable migrations reach version %d, into the cockroachdb set's range", last)
	}
	want := [][]string{{
		"ALTER TABLE dedup_records SET (ttl_expiration_expression = 'expires_at', ttl_job_cron = '@hourly')",
		"CREATE INDEX IF NOT EXISTS dedup_records_expires_at_sharded ON dedup_records (expires_at) USING HASH",
	}, {
		"SELECT count(*) FROM dedup_records@dedup_records_expires_at_sharded WHERE expires_at < '1970-01-01T00:00:00Z'",
		"DROP INDEX IF EXISTS dedup_records@dedup_records_expires_at",
	}, {
		"ALTER TABLE dedup_streams SET (ttl_expiration_expression = 'expires_at', ttl_job_cron = '@hourly')",
		"CREATE INDEX IF NOT EXISTS dedup_streams_expires_at_sharded ON dedup_streams (expires_at) USING HASH",
	}, {
		"SELECT count(*) FROM dedup_streams@dedup_streams_expires_at_sharded WHERE expires_at < '1970-01-01T00:00:00Z'",
		"DROP INDEX IF EXISTS dedup_streams@dedup_streams_expires_at",
	}}
	for i, m := range ms {
		if !reflect.DeepEqual(m.Statements, want[i]) {
			t.Errorf("%s statements:\n%q\nwant\n%q", m, m.Statements, want[i])
		}
	}
}

// The plain expiry index is never dropped before its replacement is usable:
// the drop is in a later migration than the replacement's CREATE INDEX
// (whose IF NOT EXISTS may find an index still being built), right after a
// statement that reads through the replacement by name, which fails until
// it is public.
func TestCockroachDBSetDropsTheOldIndexOnlyAfterReadingTheNewOne(t *testing.T) {
	ms, err := Load(CockroachDBTTL)
	if err != nil {
		t.Fatal(err)
	}
	const replacement = "dedup_records_expires_at_sharded"
	created := -1
	dropped := false
	for i, m := range ms {
		for j, stmt := range m.Statements {
			switch {
			case strings.HasPrefix(stmt, "CREATE INDEX") && strings.Contains(stmt, replacement):
				created = i
			case strings.HasPrefix(stmt, "DROP INDEX") && strings.Contains(stmt, "@dedup_records_expires_at"):
				dropped = true
				if created < 0 || created >= i {
					t.Errorf("%s drops the plain index in the migration that creates its replacement, or before", m)
				}
				if j == 0 || !strings.HasPrefix(m.Statements[j-1], "SELECT") || !strings.Contains(m.Statements[j-1], "@"+replacement) {
					t.Errorf("%s drops the plain index without first reading through %s", m, replacement)
				}
			}
		}
	}
	if !dropped {
		t.Fatal("no migration drops the plain expiry index")
	}
}

// The PostgreSQL-only set merges with the portable one in version order
// without colliding, and CockroachDB, which compares TEXT bytewise already,
// is never given a collated string by the sets it runs.
func TestPostgresOnlySet(t *testing.T) {
	only, err := Load(PostgresOnly)
	if err != nil {
		t.Fatal(err)
	}
	if len(only) == 0 || only[0].String() != "2001_key_collation_c" {
		t.Fatalf("postgresonly set: %v, want 2001_key_collation_c first", only)
	}
	both, err := Load(Postgres, PostgresOnly)
	if err != nil {
		t.Fatal(err)
	}
	pg, _ := Load(Postgres)
	if len(both) != len(pg)+len(only) || both[len(both)-1].Version != only[len(only)-1].Version {
		t.Fatalf("merged set: %v", both)
	}
	crdb, _ := Load(Postgres, CockroachDBTTL)
	for _, m := range crdb {
		for _, stmt := range m.Statements {
			if strings.Contains(strings.ToUpper(stmt), "COLLATE") {
				t.Errorf("%s gives CockroachDB a collated string: %s", m, stmt)
			}
		}
	}
}
