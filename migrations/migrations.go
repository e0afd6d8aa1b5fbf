// Package migrations holds the schema of every store, one numbered SQL file
// per step and dialect, and the runner that applies them.
//
// Files are named NNNN_name.sql. Statements are separated by a semicolon at
// the end of a line and run one at a time, each in its own implicit
// transaction: CockroachDB wants one DDL statement per transaction and never
// DDL mixed with DML. Every statement must be idempotent (IF NOT EXISTS):
// a run that failed halfway is simply run again; it skips the recorded
// steps and repeats the statements of the unrecorded one. The runner takes
// no lock itself: two migrators at once can collide in PostgreSQL's catalog
// (or fail an ALTER ... COLLATE at SERIALIZABLE with an internal error), so
// a store that several servers share serialises its migrators around Up
// (pgstore holds a lease row in a table, since CockroachDB has no advisory
// locks).
package migrations

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed postgres/*.sql postgresonly/*.sql sqlite/*.sql cockroachdb/*.sql
var files embed.FS

// Dialect names a directory of migrations.
type Dialect string

const (
	// Postgres runs on PostgreSQL and CockroachDB.
	Postgres Dialect = "postgres"
	// PostgresOnly is applied with Postgres on PostgreSQL, never on
	// CockroachDB: steps whose SQL would mean something else there (the
	// "C" collation of the key columns). Its versions start at 2001, so it
	// shares the version table.
	PostgresOnly Dialect = "postgresonly"
	// SQLite runs on the embedded store.
	SQLite Dialect = "sqlite"
	// CockroachDBTTL is the optional CockroachDB-only set (row-level TTL,
	// hash-sharded expiry index), applied on request after Postgres. Its
	// versions start at 1001, so it shares the version table.
	CockroachDBTTL Dialect = "cockroachdb"
)

// Migration is one numbered schema step.
type Migration struct {
	Version    int64
	Name       string
	Statements []string
}

// String names a migration as its file does, e.g. 0001_records.
func (m Migration) String() string { return fmt.Sprintf("%04d_%s", m.Version, m.Name) }

// Conn is what the runner needs from a database. Both statements it runs
// itself are portable SQL, so one runner serves every dialect.
type Conn interface {
	Exec(ctx context.Context, sql string, args ...any) error
	QueryVersions(ctx context.Context, sql string) ([]int64, error)
}

const (
	createVersionTable = `CREATE TABLE IF NOT EXISTS dedup_schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
)`
	selectVersions = `SELECT version FROM dedup_schema_migrations ORDER BY version`
	insertVersion  = `INSERT INTO dedup_schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)
ON CONFLICT (version) DO NOTHING`
)

// Load returns the migrations of the dialects, merged in version order.
func Load(ds ...Dialect) ([]Migration, error) {
	var ms []Migration
	for _, d := range ds {
		some, err := load(files, string(d))
		if err != nil {
			return nil, err
		}
		ms = append(ms, some...)
	}
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations: %s and %s share a version", ms[i-1], ms[i])
		}
	}
	return ms, nil
}

func load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	var ms []Migration
	seen := map[int64]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".sql") {
			continue
		}
		base := strings.TrimSuffix(e.Name(), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.ParseInt(num, 10, 64)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migrations: %s/%s is not named NNNN_name.sql", dir, e.Name())
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("migrations: %s and %s share version %d", other, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		ms = append(ms, Migration{Version: v, Name: name, Statements: splitStatements(string(body))})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}

// splitStatements cuts a file at semicolons that end a line, dropping
// comments. Our migrations have no procedural bodies and no "--" inside
// string literals, so neither can hide a statement's end.
func splitStatements(body string) []string {
	var stmts []string
	var cur strings.Builder
	for line := range strings.SplitSeq(body, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		code := strings.TrimSpace(line)
		if code == "" {
			continue
		}
		cur.WriteString(strings.TrimRight(line, " \t"))
		cur.WriteString("\n")
		if strings.HasSuffix(code, ";") {
			stmts = append(stmts, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		stmts = append(stmts, s)
	}
	return stmts
}

// Pending returns the migrations of ms not yet applied to the database. On
// a database that has the version table it only reads, so a server with a
// read-only role can check the schema before serving.
func Pending(ctx context.Context, db Conn, ms []Migration) ([]Migration, error) {
	versions, err := db.QueryVersions(ctx, selectVersions)
	if err != nil {
		// Most likely a fresh database without the version table; if the
		// cause was anything else, creating the table fails too and says so.
		if createErr := db.Exec(ctx, createVersionTable); createErr != nil {
			//nolint:errorlint // the create error is the cause; the read error is context only, and its 42P01 must not be matched
			return nil, fmt.Errorf("migrations: creating version table (reading it failed: %v): %w", err, createErr)
		}
		if versions, err = db.QueryVersions(ctx, selectVersions); err != nil {
			return nil, fmt.Errorf("migrations: reading applied versions: %w", err)
		}
	}
	applied := make(map[int64]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
	}
	var pending []Migration
	for _, m := range ms {
		if !applied[m.Version] {
			pending = append(pending, m)
		}
	}
	return pending, nil
}

// Up applies every pending migration in order and returns those it applied.
// Re-running it is a no-op.
func Up(ctx context.Context, db Conn, ms []Migration) ([]Migration, error) {
	pending, err := Pending(ctx, db, ms)
	if err != nil {
		return nil, err
	}
	for _, m := range pending {
		for i, stmt := range m.Statements {
			if err := db.Exec(ctx, stmt); err != nil {
				return nil, fmt.Errorf("migrations: %s statement %d: %w", m, i+1, err)
			}
		}
		now := time.Now().UTC().Format(time.RFC3339Nano)
		if err := db.Exec(ctx, insertVersion, m.Version, m.Name, now); err != nil {
			return nil, fmt.Errorf("migrations: recording %s: %w", m, err)
		}
	}
	return pending, nil
}
