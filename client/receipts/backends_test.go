package receipts

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite"

	"github.com/dedupd/dedupd/client/dedupdtest"
	"github.com/dedupd/dedupd/internal/testing/pgtest"
)

func TestMain(m *testing.M) { dedupdtest.Main(m) }

// backend is one database the receipts run on, through one driver.
type backend struct {
	name    string
	dialect Dialect
	open    func(t *testing.T) DB
}

// backends: SQLite over database/sql, PostgreSQL over pgx at its default
// READ COMMITTED and at SERIALIZABLE, and PostgreSQL over database/sql
// with the session default set to SERIALIZABLE (what CockroachDB always
// runs at).
var backends = []backend{
	{"sqlite", SQLite, func(t *testing.T) DB {
		path := filepath.Join(t.TempDir(), "r.db")
		db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return SQLDB(db, nil)
	}},
	{"postgres-pgx", Postgres, func(t *testing.T) DB { return PgxDB(pgPool(t), pgx.TxOptions{}) }},
	{"postgres-pgx-serializable", Postgres, func(t *testing.T) DB {
		return PgxDB(pgPool(t), pgx.TxOptions{IsoLevel: pgx.Serializable})
	}},
	{"postgres-sql-serializable", Postgres, func(t *testing.T) DB {
		u, err := url.Parse(pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("default_transaction_isolation", "serializable")
		u.RawQuery = q.Encode()
		db, err := sql.Open("pgx", u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return SQLDB(db, nil)
	}},
}

func pgPool(t *testing.T) *pgxpool.Pool {
	pool, err := pgxpool.New(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// forEach runs test on every backend with a migrated receipt table and an
// empty effects table: the model's record of every effect that committed.
func forEach(t *testing.T, test func(t *testing.T, b backend, db DB)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t)
			ctx := context.Background()
			if err := Migrate(ctx, db, b.dialect, ""); err != nil {
				t.Fatal(err)
			}
			exec(t, db, `CREATE TABLE effects (key TEXT NOT NULL, token BIGINT NOT NULL, result BYTEA NOT NULL)`)
			test(t, b, db)
		})
	}
}

func exec(t *testing.T, db DB, query string, args ...any) {
	t.Helper()
	err := db.InTx(context.Background(), func(ctx context.Context, tx Tx) error {
		_, err := tx.Exec(ctx, query, args...)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// effectOf is an effect that records itself in the effects table, in the
// receipt's transaction, with the result it returns.
func effectOf(d Dialect, key string, token int64, result string) Effect {
	q := `INSERT INTO effects (key, token, result) VALUES (?, ?, ?)`
	if d != SQLite {
		q = numbered(q)
	}
	return func(ctx context.Context, tx Tx) ([]byte, error) {
		_, err := tx.Exec(ctx, q, key, token, []byte(result))
		return []byte(result), err
	}
}

// row is one key's state: its effects and its receipt, read directly.
type row struct {
	effects       int
	effectToken   int64
	effectResult  string
	receipts      int
	receiptToken  int64
	receiptResult string
}

func stateOf(t *testing.T, db DB, d Dialect, key string) row {
	t.Helper()
	var r row
	ph := func(q string) string {
		if d != SQLite {
			return numbered(q)
		}
		return q
	}
	err := db.InTx(context.Background(), func(ctx context.Context, tx Tx) error {
		var e, rr []byte
		for _, q := range []struct {
			query string
			dest  []any
		}{
			{`SELECT count(*) FROM effects WHERE key = ?`, []any{&r.effects}},
			{`SELECT token, result FROM effects WHERE key = ? LIMIT 1`, []any{&r.effectToken, &e}},
			{`SELECT count(*) FROM dedupd_receipts WHERE key = ?`, []any{&r.receipts}},
			{`SELECT fencing_token, result FROM dedupd_receipts WHERE key = ?`, []any{&r.receiptToken, &rr}},
		} {
			if _, err := tx.QueryRow(ctx, ph(q.query), []any{key}, q.dest...); err != nil {
				return err
			}
		}
		r.effectResult, r.receiptResult = string(e), string(rr)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
