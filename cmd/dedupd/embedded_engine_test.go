package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// finishKey claims and completes key through srv and returns its token.
func finishKey(t *testing.T, srv *process, key, result string) int64 {
	t.Helper()
	c := dedupv1.NewDedupServiceClient(srv.dial(t))
	claim, err := c.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: "orders", Key: key, Digest: []byte(key)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), &dedupv1.CompleteRequest{Consumer: "orders", Key: key,
		FencingToken: claim.GetFencingToken(), Result: []byte(result)}); err != nil {
		t.Fatal(err)
	}
	return claim.GetFencingToken()
}

// wantReplay asserts that a claim of key through srv replays result.
func wantReplay(t *testing.T, srv *process, key, result string) {
	t.Helper()
	c := dedupv1.NewDedupServiceClient(srv.dial(t))
	got, err := c.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: "orders", Key: key, Digest: []byte(key)})
	if err != nil || got.GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED || string(got.GetRecord().GetResult()) != result {
		t.Fatalf("claim of %s = %v, %v; want COMPLETED %q", key, got, err, result)
	}
}

// An existing SQLite data directory is served as SQLite whatever the
// default, a request for the other engine on it is refused with the way
// out, and dedupd migrate-store copies it into a Pebble directory that
// then answers the same.
func TestExistingSQLiteDirectoryAndItsMigration(t *testing.T) {
	dir := t.TempDir()
	srv := startDedupd(t, "--data-dir", dir, "--embedded-engine", "sqlite")
	finishKey(t, srv, "before", "r1")
	srv.stop(t)

	srv = startDedupd(t, "--data-dir", dir) // auto
	wantReplay(t, srv, "before", "r1")
	srv.stop(t)
	if _, err := os.Stat(filepath.Join(dir, "pebble")); err == nil {
		t.Fatal("auto created a Pebble store beside the SQLite one")
	}

	out, err := runDedupd(t, "serve", "--data-dir", dir, "--embedded-engine", "pebble")
	if err == nil || !strings.Contains(out, "holds a sqlite store, not pebble") || !strings.Contains(out, "migrate-store") {
		t.Fatalf("serve --embedded-engine pebble on a SQLite directory: %v\n%s", err, out)
	}

	to := filepath.Join(t.TempDir(), "copy")
	out, err = runDedupd(t, "migrate-store", "--from", dir, "--to", to)
	if err != nil || !strings.Contains(out, "copied and verified 1 records") {
		t.Fatalf("migrate-store: %v\n%s", err, out)
	}
	srv = startDedupd(t, "--data-dir", to)
	wantReplay(t, srv, "before", "r1")
	srv.stop(t)
	if _, err := os.Stat(filepath.Join(to, "dedup.db")); err == nil {
		t.Fatal("the copy's directory holds a SQLite file")
	}
	// The source is unchanged and still served as SQLite.
	srv = startDedupd(t, "--data-dir", dir)
	wantReplay(t, srv, "before", "r1")
	srv.stop(t)
}
