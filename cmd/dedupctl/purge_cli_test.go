package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/cobra"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

func TestCLIPurge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		for i := range 5 {
			s.complete(t, "bulk", fmt.Sprintf("done-%d", i), []byte("ok"))
		}
		s.reject(t, "bulk", "refused", "NO", false)
		s.complete(t, "other", "keep", []byte("ok"))

		r := s.ok(t, "purge", "bulk", "--state", "completed", "--dry-run")
		if !strings.HasPrefix(r.stdout, "5 records match (of consumer bulk, in state COMPLETED); dry run: nothing deleted") {
			t.Errorf("dry run:\n%s", r.stdout)
		}
		var resp dedupv1.PurgeResponse
		parseJSON(t, s.ok(t, "purge", "bulk", "--dry-run", "-o", "json").stdout, &resp)
		if resp.GetDeleted() != 6 || !resp.GetDone() {
			t.Errorf("dry run JSON = %v", &resp)
		}

		// Off a terminal, purge refuses without --yes and deletes nothing.
		s.fails(t, exitUsage, "pass --yes", "purge", "bulk")
		s.fails(t, exitUsage, "name a CONSUMER", "purge", "--yes")
		s.fails(t, exitUsage, "--batch-size", "purge", "bulk", "--yes", "--batch-size", "20000")

		// Plain-lines progress: one line per batch of 2, and the total on
		// stdout only (the server's last message repeats the last batch's
		// count: it is not printed twice).
		r = s.ok(t, "purge", "bulk", "--state", "completed", "--batch-size", "2", "--yes")
		if got, want := r.stderr, "deleted 2 so far\ndeleted 4 so far\ndeleted 5 so far\n"; got != want {
			t.Errorf("progress lines = %q, want %q", got, want)
		}
		if r.stdout != "deleted 5 records\n" {
			t.Errorf("stdout = %q", r.stdout)
		}
		// --older-than keeps what is newer.
		r = s.ok(t, "purge", "bulk", "--older-than", "1h", "--yes")
		if r.stdout != "deleted 0 records\n" {
			t.Errorf("purge --older-than 1h: %q", r.stdout)
		}
		parseJSON(t, s.ok(t, "purge", "bulk", "--yes", "-o", "json").stdout, &resp)
		if resp.GetDeleted() != 1 || !resp.GetDone() {
			t.Errorf("purge JSON = %v", &resp)
		}
		var stats dedupv1.StatsResponse
		parseJSON(t, s.ok(t, "stats", "-o", "json").stdout, &stats)
		if c := stats.GetConsumers(); len(c) != 1 || c[0].GetConsumer() != "other" || c[0].GetCompleted() != 1 {
			t.Errorf("after purging bulk, stats = %v", &stats)
		}
		r = s.ok(t, "purge", "--expired", "--yes")
		if r.stdout != "deleted 0 records\n" {
			t.Errorf("purge --expired: %q", r.stdout)
		}
	})
}

// inProcess runs dedupctl's command code in this process against s, with
// stdin given and terminal flags chosen; onProgress sees each write to
// stderr.
type inProcess struct {
	stdin string
	// stdinReader, when set, is stdin instead of the string.
	stdinReader io.Reader
	interactive bool
	progressBar bool
	onStderr    func(string)
}

func (p inProcess) run(ctx context.Context, s *server, args ...string) result {
	var stdout bytes.Buffer
	stderr := &hookWriter{hook: p.onStderr}
	var in io.Reader = strings.NewReader(p.stdin)
	if p.stdinReader != nil {
		in = p.stdinReader
	}
	code := run(ctx, append([]string{"--server", s.addr}, args...), stdio{
		in: in, out: &stdout, err: stderr,
		interactive: p.interactive, progressBar: p.progressBar,
	})
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

type hookWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	hook func(string)
}

func (h *hookWriter) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hook != nil {
		h.hook(string(p))
	}
	return h.buf.Write(p)
}

func (h *hookWriter) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.buf.String()
}

func TestCLIPurgeInteractive(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		for i := range 4 {
			s.complete(t, "tty", fmt.Sprintf("k-%d", i), []byte("ok"))
		}
		ctx := context.Background()

		// "n" deletes nothing.
		r := inProcess{stdin: "n\n", interactive: true, progressBar: true}.run(ctx, s, "purge", "tty")
		if r.code != exitFailure || !strings.Contains(r.stderr, "Delete 4 records (of consumer tty)? [y/N]") ||
			!strings.Contains(r.stderr, "aborted: nothing changed") {
			t.Fatalf("answering n: %v", r)
		}
		// "y" purges with a progress bar against the counted total.
		r = inProcess{stdin: "y\n", interactive: true, progressBar: true}.run(ctx, s, "purge", "tty", "--batch-size", "3")
		if r.code != 0 || r.stdout != "deleted 4 records\n" {
			t.Fatalf("answering y: %v", r)
		}
		if !strings.Contains(r.stderr, "\r"+renderBar(3, 4)) || !strings.HasSuffix(r.stderr, "\r"+renderBar(4, 4)+eraseLine) {
			t.Errorf("progress bar not drawn, or not erased at the end: %q", r.stderr)
		}
		// With --yes the total is unknown: a counter is redrawn, then
		// erased, so the terminal shows the count once, from stdout.
		for i := range 3 {
			s.complete(t, "tty", fmt.Sprintf("y-%d", i), []byte("ok"))
		}
		r = inProcess{interactive: true, progressBar: true}.run(ctx, s, "purge", "tty", "--yes")
		if r.code != 0 || r.stdout != "deleted 3 records\n" || !strings.HasSuffix(r.stderr, eraseLine) || strings.Contains(r.stderr, "\n") {
			t.Fatalf("purge --yes on a terminal: %v", r)
		}

		// Interrupted after the first batch: reports what was deleted,
		// exits 130, and the rest stays.
		for i := range 6 {
			s.complete(t, "tty", fmt.Sprintf("k-%d", i), []byte("ok"))
		}
		s.complete(t, "bystander", "k", []byte("ok"))
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		interrupt := inProcess{onStderr: func(s string) {
			if strings.HasPrefix(s, "deleted ") {
				cancel() // Ctrl-C after the first progress line
			}
		}}
		r = interrupt.run(ctx, s, "purge", "tty", "--batch-size", "1", "--yes", "-o", "json")
		if r.code != exitInterrupted || !strings.Contains(r.stderr, "dedupctl: interrupted: at least 1 record was deleted") {
			t.Fatalf("interrupted purge: %v", r)
		}
		var resp dedupv1.PurgeResponse
		parseJSON(t, r.stdout, &resp)
		if resp.GetDone() || resp.GetDeleted() != 1 {
			t.Errorf("interrupted purge JSON = %v", &resp)
		}
		var stats dedupv1.StatsResponse
		parseJSON(t, s.ok(t, "stats", "tty", "-o", "json").stdout, &stats)
		// The server may have run more batches before it saw the cancel;
		// at least the reported one is gone, and other consumers are
		// untouched.
		if c := stats.GetConsumers(); len(c) == 1 && c[0].GetCompleted() > 5 {
			t.Errorf("after the interrupted purge %d records remain of 6, want at most 5", c[0].GetCompleted())
		}
		parseJSON(t, s.ok(t, "stats", "bystander", "-o", "json").stdout, &stats)
		if c := stats.GetConsumers(); len(c) != 1 || c[0].GetCompleted() != 1 {
			t.Errorf("the purge of tty touched another consumer: %v", &stats)
		}
	})
}

// Ctrl-C at the confirmation question exits 130 and deletes nothing, even
// when an Enter follows: dedupctl catches SIGINT, so the question must not
// keep waiting for the answer and then act on it.
func TestCLIPurgeInterruptedAtQuestion(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		for i := range 3 {
			s.complete(t, "tty", fmt.Sprintf("k-%d", i), []byte("ok"))
		}
		stdin, keyboard := io.Pipe()
		defer keyboard.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		tty := inProcess{stdinReader: stdin, interactive: true, onStderr: func(s string) {
			if strings.Contains(s, "[y/N]") {
				cancel()                                             // Ctrl-C at the question
				go func() { _, _ = keyboard.Write([]byte("y\n")) }() // then y and Enter
			}
		}}
		r := tty.run(ctx, s, "purge", "tty")
		if r.code != exitInterrupted || !strings.Contains(r.stderr, "dedupctl: interrupted: nothing changed") {
			t.Fatalf("Ctrl-C at the question: %v", r)
		}
		var stats dedupv1.StatsResponse
		parseJSON(t, s.ok(t, "stats", "tty", "-o", "json").stdout, &stats)
		if c := stats.GetConsumers(); len(c) != 1 || c[0].GetCompleted() != 3 {
			t.Errorf("after Ctrl-C at the question: %v, want the 3 records kept", &stats)
		}
	})
}

func TestCLIPolicyConfirmation(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *server) {
		ctx := context.Background()
		s.ok(t, "policy", "set", "tty", "--completed-ttl", "72h")
		tty := inProcess{stdin: "no\n", interactive: true}
		r := tty.run(ctx, s, "policy", "set", "tty", "--completed-ttl", "1h")
		if r.code != exitFailure || !strings.Contains(r.stderr, "Shorten completed_ttl of tty to 1h? [y/N]") ||
			!strings.Contains(r.stdout, "completed_ttl      72h") {
			t.Fatalf("declining a shorter TTL: %v", r)
		}
		var get dedupv1.GetPolicyResponse
		parseJSON(t, s.ok(t, "policy", "get", "tty", "-o", "json").stdout, &get)
		if got := formatProtoDuration(get.GetPolicy().GetCompletedTtl()); got != "72h" {
			t.Fatalf("declined change was applied: completed_ttl %s", got)
		}
		tty.stdin = "y\n"
		if r := tty.run(ctx, s, "policy", "set", "tty", "--completed-ttl", "1h"); r.code != 0 {
			t.Fatalf("accepting a shorter TTL: %v", r)
		}
		// A longer TTL needs no confirmation, even on a terminal.
		tty.stdin = ""
		if r := tty.run(ctx, s, "policy", "set", "tty", "--completed-ttl", "2h"); r.code != 0 || strings.Contains(r.stderr, "[y/N]") {
			t.Fatalf("lengthening a TTL: %v", r)
		}
	})
}

// TestEveryCommandHasExamples walks the command tree: every command
// users run shows examples in --help.
func TestEveryCommandHasExamples(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() != "help" && c.Example == "" {
			t.Errorf("%s has no examples", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand(&app{}))
}
