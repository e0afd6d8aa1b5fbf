package sqlitestore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

func TestDataSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	res := claim(t, s, "k", []byte("d"))
	want := complete(t, s, "k", res.Record.FencingToken, []byte("the result"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s = openStore(t, dir)
	defer s.Close()
	again := claim(t, s, "k", []byte("d"))
	if again.Outcome != store.AlreadyCompleted || !bytes.Equal(again.Record.Result, []byte("the result")) {
		t.Fatalf("claim after reopen = %v %q, want COMPLETED \"the result\"", again.Outcome, again.Record.Result)
	}
	assertSameRecord(t, again.Record, want)
}

func TestOpenCreatesPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "b")
	s := openStore(t, dir)
	defer s.Close()
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Fatalf("data directory mode %v, want 0700", perm)
	}
	for _, name := range []string{"LOCK", "dedup.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestOpenOnDirectoryWithAwkwardName(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a ?b#c%20d")
	s := openStore(t, dir)
	defer s.Close()
	claim(t, s, "k", []byte("d"))
	if _, err := os.Stat(filepath.Join(dir, "dedup.db")); err != nil {
		t.Fatalf("database not inside %q: %v", dir, err)
	}
}

func TestSecondOpenInProcessFailsUntilClosed(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)

	_, err := sqlitestore.Open(context.Background(), dir, sqlitestore.Options{})
	if !errors.Is(err, sqlitestore.ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	if want := fmt.Sprintf("data directory %s is in use by another dedupd process", dir); err.Error() != want {
		t.Fatalf("second Open says %q, want %q", err, want)
	}

	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = openStore(t, dir)
	s.Close()
}

// lockChildEnv, when set, makes TestLockAcrossProcesses act as the child:
// open the directory it names and report the outcome on stdout.
const lockChildEnv = "SQLITESTORE_TEST_LOCK_CHILD_DIR"

func TestLockAcrossProcesses(t *testing.T) {
	if dir := os.Getenv(lockChildEnv); dir != "" {
		s, err := sqlitestore.Open(context.Background(), dir, sqlitestore.Options{})
		if err != nil {
			fmt.Printf("locked=%v error=%s\n", errors.Is(err, sqlitestore.ErrLocked), err)
			os.Exit(3)
		}
		s.Close()
		fmt.Println("opened")
		return
	}
	if testing.Short() {
		t.Skip("starts a child process")
	}

	dir := t.TempDir()
	s := openStore(t, dir)
	out, code := runLockChild(t, dir)
	want := fmt.Sprintf("locked=true error=data directory %s is in use by another dedupd process", dir)
	if code != 3 || !strings.Contains(out, want) {
		t.Fatalf("child on a locked directory: exit %d, output:\n%s\nwant exit 3 and %q", code, out, want)
	}

	s.Close()
	if out, code := runLockChild(t, dir); code != 0 || !strings.Contains(out, "opened") {
		t.Fatalf("child after Close: exit %d, output:\n%s", code, out)
	}
}

func runLockChild(t *testing.T, dir string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("running child: %v", err)
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// killChildEnv, when set, makes TestCompleteSurvivesKill act as the child:
// complete a key in the directory it names, say so, and wait to be killed.
const killChildEnv = "SQLITESTORE_TEST_KILL_CHILD_DIR"

func TestCompleteSurvivesKill(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		s := openStore(t, dir)
		res := claim(t, s, "k", []byte("d"))
		complete(t, s, "k", res.Record.FencingToken, []byte("acknowledged"))
		fmt.Println("completed")
		time.Sleep(time.Minute) // killed here, with the store open
	}
	dir := storetest.KillChildAfter(t, killChildEnv, "completed")
	// The kernel released the dead process's lock; the commit is in the WAL.
	s := openStore(t, dir)
	defer s.Close()
	res := claim(t, s, "k", []byte("d"))
	if res.Outcome != store.AlreadyCompleted || string(res.Record.Result) != "acknowledged" {
		t.Fatalf("claim after kill -9 = %v %q, want COMPLETED \"acknowledged\"", res.Outcome, res.Record.Result)
	}
}

func TestMigrationsApplyOnce(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if n := len(sqlitestore.AppliedMigrations(s)); n == 0 {
		t.Fatal("first Open applied no migration")
	}
	s.Close()
	s = openStore(t, dir)
	defer s.Close()
	if applied := sqlitestore.AppliedMigrations(s); len(applied) != 0 {
		t.Fatalf("reopen applied %d migrations, want none", len(applied))
	}
}

func TestPing(t *testing.T) {
	s := newStore(t)
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func TestCallsAfterCloseAreUnavailable(t *testing.T) {
	s := openStore(t, t.TempDir())
	res := claim(t, s, "k", []byte("d"))
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	ctx := context.Background()
	calls := map[string]func() error{
		"Claim": func() error {
			_, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: "k", Digest: []byte("d"), Policy: policy})
			return err
		},
		"Complete": func() error {
			_, err := s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: "k", FencingToken: res.Record.FencingToken, Policy: policy})
			return err
		},
		"Reject": func() error {
			_, err := s.Reject(ctx, store.RejectParams{Consumer: "c", Key: "k", FencingToken: res.Record.FencingToken, Policy: policy})
			return err
		},
		"ExtendLease": func() error {
			_, err := s.ExtendLease(ctx, store.ExtendLeaseParams{Consumer: "c", Key: "k", FencingToken: res.Record.FencingToken, Policy: policy})
			return err
		},
		"Lookup": func() error {
			_, err := s.Lookup(ctx, "c", "k")
			return err
		},
		"DeleteExpired": func() error {
			_, err := s.DeleteExpired(ctx, 10)
			return err
		},
		"Ping": func() error { return s.Ping(ctx) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s after Close: %v, want ErrUnavailable", name, err)
		}
	}
}
