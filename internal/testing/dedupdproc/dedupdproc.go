// Package dedupdproc is the one way the repository's tests start a real
// dedupd: Build compiles the binary, Start runs `dedupd serve` on a free
// loopback port and waits for its --ready-file, and the Process it returns
// keeps the logs and stops the server at cleanup. client/dedupdtest (the
// client's and the examples' tests) and cmd/dedupd's end-to-end tests both
// use it.
package dedupdproc

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// startTimeout bounds how long Start waits for the ready file; it only
// turns a hung start into a failure, it measures nothing.
const startTimeout = 30 * time.Second

// Build builds the command pkg (an import path) into a new temporary
// directory and returns the binary's path.
func Build(pkg string) (string, error) {
	dir, err := os.MkdirTemp("", "dedupdproc-")
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

// Process is a running dedupd.
type Process struct {
	Cmd *exec.Cmd
	// Addr is the gRPC address it serves on; MetricsAddr is where
	// /metrics is served, when --metrics-listen is on; HTTPAddr is the
	// HTTP API's, when --http-listen is on.
	Addr, MetricsAddr, HTTPAddr string
	// Logs collects its standard error (the logs) as it runs.
	Logs *LogBuffer
	// Exited is closed once the process has exited; WaitErr is then its
	// exit status.
	Exited  chan struct{}
	WaitErr error
}

// Start runs `binary serve --listen 127.0.0.1:0 --log-format json` with
// the extra args (a later --listen wins) and returns once the server has
// written its ready file. The process is killed at cleanup if the test
// has not stopped it.
func Start(t testing.TB, binary string, args ...string) *Process {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	args = append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--ready-file", ready}, args...)
	p := &Process{Cmd: exec.Command(binary, args...), Logs: &LogBuffer{}, Exited: make(chan struct{})}
	p.Cmd.Stderr = p.Logs
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.WaitErr = p.Cmd.Wait()
		close(p.Exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.Exited:
		default:
			_ = p.Cmd.Process.Kill() // it may have exited meanwhile
			<-p.Exited
		}
		if t.Failed() {
			t.Logf("dedupd logs:\n%s", p.Logs)
		}
	})
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(startTimeout)
	for {
		if content, err := os.ReadFile(ready); err == nil {
			p.Addr, p.MetricsAddr = ParseReadyFile(string(content))
			p.HTTPAddr = ReadyValue(string(content), "http")
			return p
		}
		select {
		case <-p.Exited:
			t.Fatalf("dedupd exited (%v) before serving; logs:\n%s", p.WaitErr, p.Logs)
		case <-timeout:
			t.Fatalf("dedupd wrote no ready file within %v; logs:\n%s", startTimeout, p.Logs)
		case <-tick.C:
		}
	}
}

// ParseReadyFile reads what `dedupd serve --ready-file` writes: the gRPC
// address on the first line, then "metrics <address>" when /metrics is on.
func ParseReadyFile(content string) (addr, metricsAddr string) {
	sc := bufio.NewScanner(strings.NewReader(content))
	for first := true; sc.Scan(); first = false {
		line := sc.Text()
		if first {
			addr = line
		} else if m, ok := strings.CutPrefix(line, "metrics "); ok {
			metricsAddr = m
		}
	}
	return addr, metricsAddr
}

// ReadyValue is the address a ready file names on its "name <address>"
// line, or "" when it has none.
func ReadyValue(content, name string) string {
	for line := range strings.Lines(content) {
		if v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), name+" "); ok {
			return v
		}
	}
	return ""
}

// Stop sends SIGTERM and asserts a clean exit.
func (p *Process) Stop(t testing.TB) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	p.WaitExit(t)
}

// WaitExit waits for the process to exit and asserts it exited cleanly.
func (p *Process) WaitExit(t testing.TB) {
	t.Helper()
	select {
	case <-p.Exited:
		if p.WaitErr != nil {
			t.Fatalf("dedupd exited with %v; logs:\n%s", p.WaitErr, p.Logs)
		}
	case <-time.After(startTimeout):
		t.Fatalf("dedupd did not exit after SIGTERM; logs:\n%s", p.Logs)
	}
}

// LogBuffer collects a process's log lines while the test reads them.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
