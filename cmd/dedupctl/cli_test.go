package main

// The CLI tests build the real dedupd and dedupctl binaries and run
// dedupctl as a process against a dedupd process on each store, the way an
// operator would. Interactive paths (confirmation, the progress bar,
// Ctrl-C) run the same command code in-process with a chosen stdio.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/client/dedupdtest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// ctlBin is the dedupctl binary under test, built once in TestMain;
// dedupdtest builds dedupd.
var ctlBin string

func TestMain(m *testing.M) {
	var err error
	if ctlBin, err = dedupdtest.Build("github.com/dedupd/dedupd/cmd/dedupctl"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dedupdtest.Main(m)
}

// serveFlags are the dedupd flags of every CLI test: policies read afresh
// on each call and no reaper, so what a test changes or seeds is what
// dedupctl shows. Every embedded commit is synced, as in production:
// Pebble, the engine of dedupdtest.Embedded, has no other mode.
var serveFlags = []string{"--policy-cache-ttl", "0", "--reap-interval", "0"}

// server is a running dedupd and a client for seeding it.
type server struct {
	addr   string
	client dedupv1.DedupServiceClient
}

func newServer(t *testing.T, addr string) *server {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &server{addr: addr, client: dedupv1.NewDedupServiceClient(conn)}
}

// startDedupd starts dedupd on the embedded store with serveFlags and the
// extra flags; it is stopped at cleanup.
func startDedupd(t *testing.T, flags ...string) *server {
	t.Helper()
	return newServer(t, dedupdtest.Start(t, dedupdtest.Embedded, append(slices.Clone(serveFlags), flags...)...))
}

// forEachBackend runs test against a fresh dedupd on each store.
func forEachBackend(t *testing.T, test func(t *testing.T, s *server)) {
	dedupdtest.ForEach(t, serveFlags, func(t *testing.T, addr string) { test(t, newServer(t, addr)) })
}

// result is what one dedupctl run printed and its exit status.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// ctl runs the dedupctl binary against s with stdin not a terminal.
func (s *server) ctl(t *testing.T, args ...string) result {
	t.Helper()
	return runCtl(t, s.addr, args...)
}

func runCtl(t *testing.T, addr string, args ...string) result {
	t.Helper()
	return runCtlEnv(t, addr, nil, args...)
}

// runCtlEnv is runCtl with extra environment variables (KEY=value).
func runCtlEnv(t *testing.T, addr string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ctlBin, args...)
	cmd.Env = append(append(ctlEnv(), "DEDUPCTL_SERVER="+addr), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running dedupctl %v: %v", args, err)
	}
	return r
}

// ctlEnv is the environment without any DEDUPCTL_ or DEDUPD_ADDR setting
// of the caller.
func ctlEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DEDUPCTL_") && !strings.HasPrefix(kv, "DEDUPD_ADDR=") {
			env = append(env, kv)
		}
	}
	return env
}

// ok runs dedupctl and fails the test unless it exits 0.
func (s *server) ok(t *testing.T, args ...string) result {
	t.Helper()
	r := s.ctl(t, args...)
	if r.code != 0 {
		t.Fatalf("dedupctl %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// fails runs dedupctl and checks its exit status and its one error line.
func (s *server) fails(t *testing.T, code int, wantLine string, args ...string) {
	t.Helper()
	r := s.ctl(t, args...)
	if r.code != code {
		t.Fatalf("dedupctl %s: exit %d, want %d\n%v", strings.Join(args, " "), r.code, code, r)
	}
	first, _, _ := strings.Cut(r.stderr, "\n")
	if !strings.HasPrefix(first, "dedupctl: ") || !strings.Contains(first, wantLine) {
		t.Fatalf("dedupctl %s: first stderr line %q, want one containing %q", strings.Join(args, " "), first, wantLine)
	}
}

// parseJSON reads dedupctl's -o json output as the proto it stands for,
// and checks it is a single JSON object.
func parseJSON(t *testing.T, out string, m proto.Message) map[string]any {
	t.Helper()
	var generic map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&generic); err != nil {
		t.Fatalf("output is not a JSON object: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("output holds more than one JSON document:\n%s", out)
	}
	if err := protojson.Unmarshal([]byte(out), m); err != nil {
		t.Fatalf("output does not parse as %T: %v\n%s", m, err, out)
	}
	return generic
}

// tableRows splits a table into rows of whitespace-separated fields,
// keyed by the first field, after checking that every line starts each
// column where the header does.
func tableRows(t *testing.T, table string) map[string][]string {
	t.Helper()
	lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
	checkAligned(t, lines)
	rows := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) > 0 {
			rows[f[0]] = f
		}
	}
	return rows
}

// checkAligned checks that each header column starts at the same offset
// in every line of the table.
func checkAligned(t *testing.T, lines []string) {
	t.Helper()
	header := lines[0]
	// tabwriter separates columns by at least two spaces; a header may
	// hold one space inside ("IN FORCE").
	for i := 2; i < len(header); i++ {
		if header[i-2:i] != "  " || header[i] == ' ' {
			continue
		}
		for _, l := range lines[1:] {
			if len(l) <= i {
				continue // an empty last cell, trimmed
			}
			if l[i-1] != ' ' || l[i] == ' ' {
				t.Fatalf("column at %d of the header is not aligned in %q\ntable:\n%s", i, l, strings.Join(lines, "\n"))
			}
		}
	}
}

// tableAfter is the table in out that starts with header: the lines from
// there on that have columns (two spaces in a row).
func tableAfter(t *testing.T, out, header string) string {
	t.Helper()
	i := strings.Index(out, header)
	if i < 0 {
		t.Fatalf("no table with header %q in:\n%s", header, out)
	}
	var lines []string
	for l := range strings.SplitSeq(out[i:], "\n") {
		if !strings.Contains(l, "  ") {
			break
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// Seeding, through the DedupService as a consumer would.

func (s *server) claim(t *testing.T, consumer, key, owner string, lease time.Duration) *dedupv1.ClaimResponse {
	t.Helper()
	resp, err := s.client.Claim(context.Background(), &dedupv1.ClaimRequest{
		Consumer: consumer, Key: key, Digest: []byte{0xab, 0xcd}, Owner: owner, LeaseTtl: durationpb.New(lease)})
	if err != nil {
		t.Fatalf("Claim %s/%s: %v", consumer, key, err)
	}
	return resp
}

func (s *server) complete(t *testing.T, consumer, key string, result []byte) {
	t.Helper()
	c := s.claim(t, consumer, key, "worker-1", time.Minute)
	if _, err := s.client.Complete(context.Background(), &dedupv1.CompleteRequest{
		Consumer: consumer, Key: key, FencingToken: c.GetFencingToken(), Result: result}); err != nil {
		t.Fatalf("Complete %s/%s: %v", consumer, key, err)
	}
}

func (s *server) reject(t *testing.T, consumer, key, reason string, retryable bool) {
	t.Helper()
	c := s.claim(t, consumer, key, "worker-2", time.Minute)
	if _, err := s.client.Reject(context.Background(), &dedupv1.RejectRequest{
		Consumer: consumer, Key: key, FencingToken: c.GetFencingToken(), Reason: reason, Message: "no", Retryable: retryable}); err != nil {
		t.Fatalf("Reject %s/%s: %v", consumer, key, err)
	}
}

// abandon claims keys with a lease of a millisecond and waits until the
// server lists them all as PENDING with an expired lease.
func (s *server) abandon(t *testing.T, consumer, owner string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		s.claim(t, consumer, k, owner, time.Millisecond)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := s.client.ListRecords(context.Background(), &dedupv1.ListRecordsRequest{
			Consumer: consumer, LeaseExpired: true, PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.GetRecords()) >= len(keys) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("leases of %v never ran out", keys)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
