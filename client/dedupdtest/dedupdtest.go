// Package dedupdtest starts real dedupd processes for the tests of the
// client and the examples: the binary is built once per test binary, and
// each test gets its own server on the embedded store or on a fresh
// PostgreSQL schema. It is a thin layer over internal/testing/dedupdproc, the
// repository's one launcher, adding the choice of backend.
package dedupdtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	"github.com/dedupd/dedupd/internal/testing/pgtest"
)

var binary string

// Main builds dedupd, then runs the tests with pgtest.Main (which gives
// each test a fresh PostgreSQL schema). Call it from TestMain.
func Main(m *testing.M) {
	var err error
	if binary, err = dedupdproc.Build("github.com/dedupd/dedupd/cmd/dedupd"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// Build builds the command pkg (an import path) into a new temporary
// directory and returns the binary's path, for tests that run other
// commands of the repository (dedupctl) beside dedupd.
func Build(pkg string) (string, error) { return dedupdproc.Build(pkg) }

// Backend selects a store for Start.
type Backend struct {
	Name    string
	prepare func(t testing.TB) []string
}

// Backends are the embedded store on SQLite (named: a new directory is
// Pebble's by default) and PostgreSQL.
var Backends = []Backend{
	{"sqlite", func(t testing.TB) []string { return []string{"--data-dir", t.TempDir(), "--embedded-engine", "sqlite"} }},
	{"postgres", func(t testing.TB) []string {
		url := pgtest.URL(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, binary, "migrate", "--database-url", url).CombinedOutput(); err != nil {
			t.Fatalf("dedupd migrate: %v\n%s", err, out)
		}
		return []string{"--database-url", url}
	}},
}

// Embedded is the embedded store on the engine a new data directory gets,
// Pebble, for tests whose subject does not depend on the store
// (authentication, TLS, the clients' helpers): what a new user runs.
var Embedded = Backend{"pebble", func(t testing.TB) []string {
	return []string{"--data-dir", t.TempDir(), "--embedded-engine", "pebble"}
}}

// ForEach runs test once per backend, as a subtest named after it, with a
// fresh dedupd started with the extra flags.
func ForEach(t *testing.T, flags []string, test func(t *testing.T, addr string)) {
	for _, b := range Backends {
		t.Run(b.Name, func(t *testing.T) { test(t, Start(t, b, flags...)) })
	}
}

// Start runs `dedupd serve` on a free loopback port with the backend and
// the extra flags, and returns its address once it serves. The process is
// killed at cleanup.
func Start(t testing.TB, b Backend, flags ...string) string {
	t.Helper()
	return dedupdproc.Start(t, binary, append(b.prepare(t), flags...)...).Addr
}
