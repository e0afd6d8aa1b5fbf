// Package dedupdtest starts real dedupd processes for the tests of the
// client and the examples: the binary is built once per test binary, and
// each test gets its own server on the embedded store or on a fresh
// PostgreSQL schema.
package dedupdtest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dedupd/dedupd/internal/pgtest"
)

var binary string

// Main builds dedupd, then runs the tests with pgtest.Main (which gives
// each test a fresh PostgreSQL schema). Call it from TestMain.
func Main(m *testing.M) {
	var err error
	if binary, err = Build("github.com/dedupd/dedupd/cmd/dedupd"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// Build builds the command pkg (an import path) into a new temporary
// directory and returns the binary's path, for tests that run other
// commands of the repository (dedupctl) beside dedupd.
func Build(pkg string) (string, error) {
	dir, err := os.MkdirTemp("", "dedupdtest-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, path.Base(pkg))
	build := exec.Command("go", "build", "-o", bin, pkg)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return "", fmt.Errorf("building %s: %w", pkg, err)
	}
	return bin, nil
}

// Backend selects a store for Start.
type Backend struct {
	Name    string
	prepare func(t testing.TB) []string
}

// Backends are the embedded SQLite store and PostgreSQL.
var Backends = []Backend{
	{"sqlite", func(t testing.TB) []string { return []string{"--data-dir", t.TempDir()} }},
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

// Embedded is the SQLite backend, for tests whose subject does not depend
// on the store (authentication, TLS).
var Embedded = Backends[0]

// ForEach runs test once per backend, as a subtest named after it, with a
// fresh dedupd started with the extra flags.
func ForEach(t *testing.T, flags []string, test func(t *testing.T, addr string)) {
	for _, b := range Backends {
		t.Run(b.Name, func(t *testing.T) { test(t, Start(t, b, flags...)) })
	}
}

// Start runs `dedupd serve` on a free loopback port with the backend and
// the extra flags, and returns its address. The process is killed at
// cleanup.
func Start(t testing.TB, b Backend, flags ...string) string {
	t.Helper()
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json"}, b.prepare(t)...)
	cmd := exec.Command(binary, append(args, flags...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs syncBuilder
	addrCh := make(chan string, 1)
	exited := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.add(sc.Text() + "\n")
			var entry struct{ Msg, Listen string }
			if json.Unmarshal(sc.Bytes(), &entry) == nil && entry.Msg == "dedupd serving" {
				addrCh <- entry.Listen
			}
		}
		cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("dedupd logs:\n%s", logs.String())
		}
	})
	select {
	case addr := <-addrCh:
		return addr
	case <-exited:
		t.Fatalf("dedupd exited before serving; logs:\n%s", logs.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("dedupd did not start; logs:\n%s", logs.String())
	}
	return ""
}

type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) add(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(line)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
