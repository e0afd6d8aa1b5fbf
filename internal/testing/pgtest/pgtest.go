// Package pgtest gives each test a PostgreSQL schema of its own.
//
// A test package that needs PostgreSQL calls Main from its TestMain:
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
// Main creates one database for the test process, named dedupd_test_<random>,
// on the server that DEDUP_TEST_POSTGRES_URL points to (by default
// postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable), runs the
// tests, and drops the database. URL then hands each test a connection URL
// whose search_path is a fresh, empty schema in that database, dropped when
// the test ends, so tests can run in parallel without seeing each other's
// rows.
//
// When PostgreSQL cannot be reached, URL skips the test with a message
// naming DEDUP_TEST_POSTGRES_URL, so that a developer without a database can
// still run the rest. Under CI (any non-empty CI value other than "false" or
// "0", since CI systems set CI=true, CI=1 or CI=yes) it fails the test
// instead: CI must never pass by skipping the database tests.
package pgtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

const (
	// EnvURL names the environment variable with the server to test on. Its
	// database is only used to create and drop the test database.
	EnvURL = "DEDUP_TEST_POSTGRES_URL"
	// DefaultURL is used when EnvURL is unset.
	DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

	setupTimeout = 15 * time.Second
)

// process is the database of this test process, set up by Main.
var process struct {
	mainRan   bool
	serverURL string // EnvURL or DefaultURL
	dbURL     string // the test database
	admin     *pgxpool.Pool
	setupErr  error
}

// Main creates the test database, runs the tests, drops the database, and
// exits with the tests' status. Call it from TestMain.
func Main(m *testing.M) {
	process.mainRan = true
	process.serverURL = os.Getenv(EnvURL)
	if process.serverURL == "" {
		process.serverURL = DefaultURL
	}
	name := fmt.Sprintf("dedupd_test_%016x", rand.Uint64())
	if err := createDatabase(name); err != nil {
		process.setupErr = err
		fmt.Fprintf(os.Stderr, "\n*** pgtest: %s ***\n\n", unreachableMessage(err))
	}
	code := m.Run()
	if process.setupErr == nil {
		if err := dropDatabase(name); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: dropping test database %s: %v\n", name, err)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

// onServer runs fn on a connection to the server's maintenance database,
// where databases can be created and dropped.
func onServer(fn func(ctx context.Context, conn *pgx.Conn) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn, err := pgx.Connect(ctx, process.serverURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return fn(ctx, conn)
}

func createDatabase(name string) error {
	return onServer(func(ctx context.Context, conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			return fmt.Errorf("creating test database: %w", err)
		}
		process.dbURL = withSetting(process.serverURL, "dbname", name)
		cfg, err := pgxpool.ParseConfig(process.dbURL)
		if err != nil {
			return err
		}
		// The helper's own pool stays small, so as not to compete with the
		// stores under test for the server's connections.
		cfg.MaxConns = 4
		process.admin, err = pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return err
		}
		return process.admin.Ping(ctx)
	})
}

func dropDatabase(name string) error {
	if process.admin != nil {
		process.admin.Close()
	}
	return onServer(func(ctx context.Context, conn *pgx.Conn) error {
		// FORCE ends the connections a test leaked, which would block the drop.
		_, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		return err
	})
}

// URL returns a connection URL to a new, empty schema, dropped when the test
// ends. It skips the test when PostgreSQL is unreachable, or fails it under
// CI (see InCI).
func URL(t testing.TB) string {
	t.Helper()
	if !process.mainRan {
		t.Fatal("pgtest: URL needs pgtest.Main: add func TestMain(m *testing.M) { pgtest.Main(m) } to the package's tests")
	}
	if process.setupErr != nil {
		if ci := os.Getenv("CI"); InCI(ci) {
			t.Fatalf("pgtest: %s (CI=%s: failing instead of skipping)", unreachableMessage(process.setupErr), ci)
		}
		t.Skipf("pgtest: SKIPPING: %s", unreachableMessage(process.setupErr))
	}
	schema := fmt.Sprintf("test_%016x", rand.Uint64())
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := process.admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("pgtest: creating schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
		defer cancel()
		// The database is dropped at the end anyway; a failure here only
		// keeps the schema around until then.
		if _, err := process.admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Logf("pgtest: dropping schema %s: %v", schema, err)
		}
	})
	// pgx sends settings it does not know itself, such as search_path, to
	// the server as runtime parameters of each connection.
	return withSetting(process.dbURL, "search_path", schema)
}

func unreachableMessage(err error) string {
	return fmt.Sprintf("cannot set up a test database on the PostgreSQL at %s (set %s to a reachable server where the user may CREATE DATABASE): %v",
		redacted(process.serverURL), EnvURL, err)
}

// withSetting returns the connection string s with one setting replaced or
// added, for both forms pgx accepts: a URL and key=value pairs. A URL's
// database is its path.
func withSetting(s, key, value string) string {
	if u, err := url.Parse(s); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		if key == "dbname" {
			u.Path = "/" + value
			return u.String()
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	// In key=value form a later setting overrides an earlier one.
	return s + " " + key + "=" + value
}

func redacted(s string) string {
	if u, err := url.Parse(s); err == nil && u.Scheme != "" {
		return u.Redacted()
	}
	return "the configured server"
}

// InCI reports whether the value of the CI environment variable means the
// tests run under CI: any non-empty value other than "false" or "0".
func InCI(value string) bool {
	switch strings.ToLower(strings.TrimSpace(value)) {
	case "", "false", "0":
		return false
	}
	return true
}
