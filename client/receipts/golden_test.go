package receipts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// golden holds the receipt table's SQL in testdata, which every client's
// receipts helper checks its own SQL against: one table, shared by
// services in several languages, needs the same DDL and queries from
// each. DEDUPD_UPDATE_GOLDEN=1 rewrites the files from this helper.
var golden = []struct {
	file  string
	stmts func() []string
}{
	{"migration-postgres.sql", func() []string { return migration(Postgres, DefaultTable) }},
	{"migration-sqlite.sql", func() []string { return migration(SQLite, DefaultTable) }},
	{"queries.sql", func() []string {
		s := statementsFor(SQLite, DefaultTable) // the ? form; PostgreSQL's only numbers them
		return []string{s.write, s.settle, s.prune}
	}},
}

// joinStatements is the files' form: each statement ends with ";" and a
// blank line.
func joinStatements(stmts []string) string {
	var b strings.Builder
	for _, s := range stmts {
		b.WriteString(s + ";\n\n")
	}
	return b.String()
}

func TestSQLMatchesGolden(t *testing.T) {
	if migration(Cockroach, DefaultTable)[0] != migration(Postgres, DefaultTable)[0] {
		t.Fatal("CockroachDB's DDL differs from PostgreSQL's; testdata has one file for both")
	}
	for _, g := range golden {
		path := filepath.Join("testdata", g.file)
		got := joinStatements(g.stmts())
		if os.Getenv("DEDUPD_UPDATE_GOLDEN") == "1" {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s differs from the helper's SQL:\n%s\nwant:\n%s", path, got, want)
		}
	}
}
