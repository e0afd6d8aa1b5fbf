package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/dedupd/dedupd/internal/pgtest"
)

// dedupdBin is the real binary, built once for the end-to-end tests.
var dedupdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dedupd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dedupdBin = filepath.Join(dir, "dedupd")
	build := exec.Command("go", "build", "-o", dedupdBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dedupd:", err)
		os.Exit(1)
	}
	pgtest.Main(m)
}

// process is a running dedupd.
type process struct {
	cmd  *exec.Cmd
	addr string
	// metricsAddr is where /metrics is served, when --metrics-listen is on.
	metricsAddr string
	logs        *logBuffer
	// exited is closed once the process has exited; waitErr is then its
	// exit status.
	exited  chan struct{}
	waitErr error
}

// logBuffer collects a process's log lines while the test reads them.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runDedupd runs the binary to completion and returns its combined output.
func runDedupd(t testing.TB, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, dedupdBin, args...).CombinedOutput()
	return string(out), err
}

// startDedupd starts `dedupd serve` on a free port and waits until it logs
// the address it serves on. The process is stopped at cleanup if the test
// has not stopped it.
func startDedupd(t testing.TB, args ...string) *process {
	t.Helper()
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json"}, args...)
	cmd := exec.Command(dedupdBin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, logs: &logBuffer{}, exited: make(chan struct{})}
	addrCh := make(chan servingLine, 1)
	go p.readLogs(stderr, addrCh)
	select {
	case serving := <-addrCh:
		p.addr, p.metricsAddr = serving.Listen, serving.Metrics
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("dedupd did not start; logs:\n%s", p.logs)
	}
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

// servingLine is the log line dedupd writes once it serves.
type servingLine struct{ Msg, Listen, Metrics string }

func (p *process) readLogs(r io.Reader, addrCh chan<- servingLine) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		p.logs.WriteString(line + "\n")
		var entry servingLine
		if json.Unmarshal([]byte(line), &entry) == nil && entry.Msg == "dedupd serving" {
			addrCh <- entry
		}
	}
	close(addrCh)
	p.waitErr = p.cmd.Wait()
	close(p.exited)
}

// stop sends SIGTERM and asserts a clean exit.
func (p *process) stop(t testing.TB) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.waitExit(t)
}

// waitExit waits for the process to exit and asserts it exited cleanly.
func (p *process) waitExit(t testing.TB) {
	t.Helper()
	select {
	case <-p.exited:
		if p.waitErr != nil {
			t.Fatalf("dedupd exited with %v; logs:\n%s", p.waitErr, p.logs)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("dedupd did not exit after SIGTERM; logs:\n%s", p.logs)
	}
}

func (p *process) dial(t testing.TB) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(p.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
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
	{"sqlite", func(t testing.TB) []string { return []string{"--data-dir", t.TempDir()} }},
	{"postgres", func(t testing.TB) []string {
		url := pgtest.URL(t)
		if out, err := runDedupd(t, "migrate", "--database-url", url); err != nil {
			t.Fatalf("dedupd migrate: %v\n%s", err, out)
		}
		return []string{"--database-url", url}
	}},
}

// Every backend again with group commit and the replay cache off: neither
// may change what a client sees.
func init() {
	for _, b := range backends[:len(backends):len(backends)] {
		backends = append(backends, backend{b.name + "-plain", func(t testing.TB) []string {
			return append(b.prepare(t), "--group-commit=false", "--replay-cache-bytes=0")
		}})
	}
}

func forEachBackend(t *testing.T, test func(t *testing.T, flags []string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { test(t, b.prepare(t)) })
	}
}
