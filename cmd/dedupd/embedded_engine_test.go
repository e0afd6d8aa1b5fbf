package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// finishKey claims and completes key through srv.
func finishKey(t *testing.T, srv *process, key, result string) {
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

// TestNewDirectoryEngine: a new data directory is Pebble's, whether serve
// or migrate creates it, unless it asks for --embedded-sync normal, which
// only SQLite offers; naming Pebble with it, or serving a Pebble directory
// with it, is refused. The engine is read from the files the directory
// holds, not from what dedupd says.
func TestNewDirectoryEngine(t *testing.T) {
	const wrongSync = "--embedded-sync normal is for the SQLite engine"
	for _, tc := range []struct {
		name    string
		args    []string // after the command and --data-dir
		command string
		holds   string // the file or directory the engine made; "" when refused
		err     string
	}{
		{"serve, auto", nil, "serve", "pebble", ""},
		{"serve, auto, sync normal", []string{"--embedded-sync", "normal"}, "serve", "dedup.db", ""},
		{"serve, sqlite", []string{"--embedded-engine", "sqlite"}, "serve", "dedup.db", ""},
		{"serve, pebble, sync normal", []string{"--embedded-engine", "pebble", "--embedded-sync", "normal"}, "serve", "", wrongSync},
		{"migrate", nil, "migrate", "pebble", ""},
		{"migrate, sqlite", []string{"--embedded-engine", "sqlite"}, "migrate", "dedup.db", ""},
		{"migrate, pebble", []string{"--embedded-engine", "pebble"}, "migrate", "pebble", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "new")
			args := append([]string{"--data-dir", dir}, tc.args...)
			switch {
			case tc.err != "":
				out, err := runDedupd(t, append([]string{tc.command, "--listen", "127.0.0.1:0"}, args...)...)
				if err == nil || !strings.Contains(out, tc.err) {
					t.Fatalf("%s %v: %v, output %q; want a refusal containing %q", tc.command, args, err, out, tc.err)
				}
				return
			case tc.command == "serve":
				srv := startDedupd(t, args...)
				finishKey(t, srv, "k", "r")
				srv.stop(t)
			default:
				if out, err := runDedupd(t, append([]string{tc.command}, args...)...); err != nil {
					t.Fatalf("%s %v: %v\n%s", tc.command, args, err, out)
				}
			}
			wantOnlyEngineFiles(t, dir, tc.holds)
		})
	}
}

// wantOnlyEngineFiles asserts that dir holds engine's data (dedup.db or
// pebble) and not the other engine's.
func wantOnlyEngineFiles(t *testing.T, dir, holds string) {
	t.Helper()
	for _, name := range []string{"dedup.db", "pebble"} {
		_, err := os.Stat(filepath.Join(dir, name))
		if there := err == nil; there != (name == holds) {
			t.Errorf("%s in the new directory: %v; want it there only if the engine is %s's", name, err, holds)
		}
	}
}

// TestPebbleDirectoryRefusesSyncNormal: a directory that holds Pebble keeps
// it under auto, so asking it for --embedded-sync normal is refused as for
// a named Pebble, not served by SQLite beside it.
func TestPebbleDirectoryRefusesSyncNormal(t *testing.T) {
	dir := t.TempDir()
	srv := startDedupd(t, "--data-dir", dir, "--embedded-engine", "pebble")
	finishKey(t, srv, "before", "r1")
	srv.stop(t)
	out, err := runDedupd(t, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--embedded-sync", "normal")
	if err == nil || !strings.Contains(out, "--embedded-sync normal is for the SQLite engine") {
		t.Fatalf("serve --embedded-sync normal on a Pebble directory: %v, output %q; want the refusal", err, out)
	}
	wantOnlyEngineFiles(t, dir, "pebble")
}
