package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/migrations"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// connect opens a connection of the test's own to url, closed when the
// test ends.
func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// execAll runs test-only SQL (PL/pgSQL triggers that inject errors; the
// product's SQL never uses PL/pgSQL) on the schema of url.
func execAll(t *testing.T, url string, sqls ...string) {
	t.Helper()
	conn := connect(t, url)
	for _, sql := range sqls {
		if _, err := conn.Exec(context.Background(), sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
}

func queryInt(t *testing.T, url, sql string) int64 {
	t.Helper()
	var n int64
	if err := connect(t, url).QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// A write that fails with SQLSTATE 40003, CockroachDB's "result is
// ambiguous", is reported as ErrUnavailable (outcome unknown) and sent once:
// the store never retries it blindly, with group commit on or off, for a
// fresh claim's INSERT or a Complete's UPDATE. PostgreSQL never raises 40003
// itself; a trigger raises it here, and a sequence (which no rollback
// undoes) counts the attempts.
func TestAmbiguousCommitIsUnavailableAndNotRetried(t *testing.T) {
	withEachCommitMode(t, func(t *testing.T, url string, s *pgstore.Store) {
		ctx := context.Background()
		execAll(t, url,
			`CREATE SEQUENCE ambiguous_attempts`,
			`CREATE FUNCTION raise_ambiguous() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF (TG_OP = 'INSERT' AND NEW.key = 'ambiguous-claim') OR (TG_OP = 'UPDATE' AND NEW.key = 'ambiguous-complete') THEN
		PERFORM nextval('ambiguous_attempts');
		RAISE EXCEPTION 'result is ambiguous' USING ERRCODE = '40003';
	END IF;
	RETURN NEW;
END $$`,
			`CREATE TRIGGER raise_ambiguous BEFORE INSERT OR UPDATE ON dedup_records
	FOR EACH ROW EXECUTE FUNCTION raise_ambiguous()`)

		if _, err := s.Claim(ctx, claimParams("ambiguous-claim")); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Claim whose INSERT is ambiguous: %v; want ErrUnavailable", err)
		}
		held, err := s.Claim(ctx, claimParams("ambiguous-complete"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Complete(ctx, store.CompleteParams{Consumer: "billing", Key: "ambiguous-complete",
			FencingToken: held.Record.FencingToken, Result: []byte("r"), Policy: policy})
		if !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Complete whose UPDATE is ambiguous: %v; want ErrUnavailable", err)
		}
		if n := queryInt(t, url, `SELECT last_value FROM ambiguous_attempts`); n != 2 {
			t.Errorf("the two ambiguous writes were sent %d times in all, want once each", n)
		}
		if _, err := s.Claim(ctx, claimParams("plain")); err != nil {
			t.Errorf("Claim of another key: %v", err)
		}
	})
}

// withEachCommitMode runs test on a migrated store on a fresh schema, once
// with group commit and once writing one call at a time.
func withEachCommitMode(t *testing.T, test func(t *testing.T, url string, s *pgstore.Store)) {
	for name, opts := range map[string]pgstore.Options{"group commit": {}, "one at a time": {MaxBatch: 1}} {
		t.Run(name, func(t *testing.T) {
			url := pgtest.URL(t)
			s, err := pgstore.Open(context.Background(), url, opts)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			test(t, url, migrated(t, s))
		})
	}
}

// The migration runner runs again after a serialization failure (40001),
// which CockroachDB can raise for a migration's statements. A trigger fails
// the first insert into the version table with 40001.
func TestMigrateRetriesASerializationFailure(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	s := openStore(t, url)
	execAll(t, url,
		`CREATE TABLE dedup_schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
)`,
		`CREATE SEQUENCE version_inserts`,
		`CREATE FUNCTION fail_first_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF nextval('version_inserts') = 1 THEN
		RAISE EXCEPTION 'could not serialize access' USING ERRCODE = '40001';
	END IF;
	RETURN NEW;
END $$`,
		`CREATE TRIGGER fail_first_insert BEFORE INSERT ON dedup_schema_migrations
	FOR EACH ROW EXECUTE FUNCTION fail_first_insert()`)

	all, err := migrations.Load(migrations.Postgres, migrations.PostgresOnly)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("Migrate after one serialization failure: %v; want it retried", err)
	}
	if pending, err := s.PendingMigrations(ctx); err != nil || len(pending) != 0 {
		t.Fatalf("after Migrate, %d of %d migrations pending, %v", len(pending), len(all), err)
	}
}
