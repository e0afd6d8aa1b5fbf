package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	"github.com/dedupd/dedupd/internal/testing/pgtest"
)

// dedupdBin is the real binary, built once for the end-to-end tests.
var dedupdBin string

func TestMain(m *testing.M) {
	var err error
	if dedupdBin, err = dedupdproc.Build("github.com/dedupd/dedupd/cmd/dedupd"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// process is a running dedupd, started through the repository's one
// launcher (internal/testing/dedupdproc).
type process struct{ *dedupdproc.Process }

// runDedupd runs the binary to completion and returns its combined output.
func runDedupd(t testing.TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, dedupdBin, args...).CombinedOutput()
	return string(out), err
}

// startDedupd starts `dedupd serve` on a free port and waits until it
// serves. The process is stopped at cleanup if the test has not stopped it.
func startDedupd(t testing.TB, args ...string) *process {
	t.Helper()
	return &process{dedupdproc.Start(t, dedupdBin, args...)}
}

// stop sends SIGTERM and asserts a clean exit.
func (p *process) stop(t testing.TB) {
	t.Helper()
	p.Stop(t)
}

// waitExit waits for the process to exit and asserts it exited cleanly.
func (p *process) waitExit(t testing.TB) {
	t.Helper()
	p.WaitExit(t)
}

func (p *process) dial(t testing.TB) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(p.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// backend is a store the end-to-end tests run against: the flags that
// select it for serve, prepared for one test.
type backend struct {
	name    string
	prepare func(t testing.TB) []string
}

var backends = []backend{
	{"sqlite", func(t testing.TB) []string { return []string{"--data-dir", t.TempDir(), "--embedded-engine", "sqlite"} }},
	{"postgres", func(t testing.TB) []string {
		url := pgtest.URL(t)
		if out, err := runDedupd(t, "migrate", "--database-url", url); err != nil {
			t.Fatalf("dedupd migrate: %v\n%s", err, out)
		}
		return []string{"--database-url", url}
	}},
}

// Every backend again with group commit and the replay cache off: neither
// may change what a client sees. Then the embedded store on Pebble, once:
// group commit is SQLite's and PostgreSQL's, and the replay cache in front
// of a store is the same whatever the store. Both embedded engines are
// named, not left to auto, so that each stays covered whichever is the
// default.
func init() {
	for _, b := range slices.Clip(backends) {
		backends = append(backends, backend{b.name + "-plain", func(t testing.TB) []string {
			return append(b.prepare(t), "--group-commit=false", "--replay-cache-bytes=0")
		}})
	}
	backends = append(backends, backend{"pebble", func(t testing.TB) []string {
		return []string{"--data-dir", t.TempDir(), "--embedded-engine", "pebble"}
	}})
}

func forEachBackend(t *testing.T, test func(t *testing.T, flags []string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b.prepare(t)) })
	}
}
