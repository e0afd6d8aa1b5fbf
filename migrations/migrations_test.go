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
	if len(ms) != 2 || ms[0].String() != "1001_row_level_ttl" || ms[1].String() != "1014_streams_row_level_ttl" {
		t.Fatalf("cockroachdb set: %v, want 1001_row_level_ttl, 1014_streams_row_level_ttl", ms)
	}
	pg, err := Load(Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if last := pg[len(pg)-1].Version; last >= ms[0].Version {
		t.Fatalf("portable migrations reach version %d, into the cockroachdb set's range", last)
	}
	want := []string{
		"ALTER TABLE dedup_records SET (ttl_expiration_expression = 'expires_at', ttl_job_cron = '@hourly')",
		"CREATE INDEX IF NOT EXISTS dedup_records_expires_at_sharded ON dedup_records (expires_at) USING HASH",
		"DROP INDEX IF EXISTS dedup_records@dedup_records_expires_at",
	}
	if !reflect.DeepEqual(ms[0].Statements, want) {
		t.Fatalf("statements:\n%q\nwant\n%q", ms[0].Statements, want)
	}
	if got := ms[1].Statements; len(got) != 3 || !strings.HasPrefix(got[0], "ALTER TABLE dedup_streams SET (ttl_expiration_expression") {
		t.Fatalf("streams TTL statements: %q", got)
	}
}
