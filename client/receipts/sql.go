package receipts

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Dialect is the SQL flavour of the caller's database.
type Dialect int

const (
	// Postgres is PostgreSQL (any isolation level).
	Postgres Dialect = iota
	// Cockroach is CockroachDB: the same SQL as PostgreSQL, whose DDL
	// already runs one statement per transaction.
	Cockroach
	// SQLite stores times as INTEGER Unix microseconds.
	SQLite
)

// SchemaVersion is the receipt table's migration version.
const SchemaVersion = 1

// DefaultTable is the receipt table's name when none is given.
const DefaultTable = "dedupd_receipts"

// tableName is what a configurable table name may be: it is written into
// the SQL, so it is checked rather than quoted.
var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,50}$`)

func checkTable(name string) error {
	if !tableName.MatchString(name) {
		return fmt.Errorf("receipts: table name %q is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 51 characters)", name)
	}
	return nil
}

// migration returns migration version 1 for d: the statements, each to run
// in its own transaction, in order.
func migration(d Dialect, table string) []string {
	create := `CREATE TABLE IF NOT EXISTS ` + table + ` (
	consumer      TEXT        NOT NULL,
	key           TEXT        NOT NULL,
	fencing_token BIGINT      NOT NULL CHECK (fencing_token > 0),
	result        BYTEA       NOT NULL,
	recorded_at   TIMESTAMPTZ NOT NULL,
	expires_at    TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (consumer, key)
)`
	if d == SQLite {
		create = `CREATE TABLE IF NOT EXISTS ` + table + ` (
	consumer      TEXT    NOT NULL,
	key           TEXT    NOT NULL,
	fencing_token INTEGER NOT NULL CHECK (fencing_token > 0),
	result        BLOB    NOT NULL,
	recorded_at   INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	PRIMARY KEY (consumer, key)
) WITHOUT ROWID`
	}
	return []string{
		create,
		`CREATE TABLE IF NOT EXISTS ` + table + `_schema (version INTEGER PRIMARY KEY)`,
		`INSERT INTO ` + table + `_schema (version) VALUES (` + strconv.Itoa(SchemaVersion) + `) ON CONFLICT DO NOTHING`,
	}
}

// statements are the receipt's queries for one table and dialect.
type statements struct {
	write, settle, prune string
}

func statementsFor(d Dialect, table string) statements {
	s := statements{
		write: `INSERT INTO ` + table + ` (consumer, key, fencing_token, result, recorded_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (consumer, key) DO UPDATE SET
	fencing_token = excluded.fencing_token, result = excluded.result,
	recorded_at = excluded.recorded_at, expires_at = excluded.expires_at
WHERE ` + table + `.expires_at <= excluded.recorded_at
RETURNING fencing_token`,
		settle: `SELECT fencing_token, result FROM ` + table + ` WHERE consumer = ? AND key = ? AND expires_at > ?`,
		prune: `DELETE FROM ` + table + ` WHERE (consumer, key) IN (
	SELECT consumer, key FROM ` + table + ` WHERE expires_at <= ? LIMIT ?)`,
	}
	if d != SQLite {
		s.write, s.settle, s.prune = numbered(s.write), numbered(s.settle), numbered(s.prune)
	}
	return s
}

// numbered turns ? placeholders into PostgreSQL's $1, $2, ...
func numbered(q string) string {
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
