package main

import (
	"os/exec"
	"strings"
	"testing"
)

// dedupctl is a client of dedupd: it links no storage engine and none of
// the server, so that it stays small and never reaches dedupd's data. The
// one database driver it links, pgx, is the PostgreSQL baseline's of
// `dedupctl bench --baseline-database-url`, and only that package may
// import it. The engine limit is `dedupd bench-engine`'s.
func TestLinksNoStorageEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}} {{join .Imports " "}}`,
		"github.com/dedupd/dedupd/cmd/dedupctl").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{"modernc.org/sqlite", "github.com/mattn/go-sqlite3", "github.com/cockroachdb/",
		"github.com/dedupd/dedupd/server/"}
	const pgx, pgxUser = "github.com/jackc/pgx/", "github.com/dedupd/dedupd/internal/loadtest"
	var found []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, prefix := range forbidden {
			if strings.HasPrefix(pkg, prefix) {
				found = append(found, pkg)
			}
		}
		if pkg == pgxUser || strings.HasPrefix(pkg, pgx) {
			continue
		}
		for imp := range strings.FieldsSeq(imports) {
			if strings.HasPrefix(imp, pgx) {
				found = append(found, pkg+" imports "+imp)
			}
		}
	}
	if len(found) > 0 {
		t.Errorf("dedupctl links %d storage engine or server packages:\n%s", len(found), strings.Join(found, "\n"))
	}
}
