package pebblestore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

var policy = store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}

func claim(t *testing.T, s store.Store, key string) store.ClaimResult {
	t.Helper()
	res, err := s.Claim(context.Background(), store.ClaimParams{Consumer: "c", Key: key, Digest: []byte("d"), Policy: policy})
	if err != nil {
		t.Fatalf("Claim %s: %v", key, err)
	}
	return res
}

func complete(t *testing.T, s store.Store, key string, token int64, result string) store.Record {
	t.Helper()
	rec, err := s.Complete(context.Background(), store.CompleteParams{Consumer: "c", Key: key, FencingToken: token,
		Result: []byte(result), Policy: policy})
	if err != nil {
		t.Fatalf("Complete %s: %v", key, err)
	}
	return rec
}

func TestDataSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	res := claim(t, s, "k")
	want := complete(t, s, "k", res.Record.FencingToken, "the result")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s = openStore(t, dir)
	defer s.Close()
	again := claim(t, s, "k")
	if again.Outcome != store.AlreadyCompleted || string(again.Record.Result) != "the result" ||
		!again.Record.UpdatedAt.Equal(want.UpdatedAt) || again.Record.FencingToken != want.FencingToken {
		t.Fatalf("claim after reopen = %v %+v, want COMPLETED %+v", again.Outcome, again.Record, want)
	}
}

func TestSecondOpenFailsUntilClosed(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	_, err := pebblestore.Open(context.Background(), dir, pebblestore.Options{})
	if !errors.Is(err, pebblestore.ErrLocked) || !strings.Contains(err.Error(), "is in use by another dedupd process") {
		t.Fatalf("second Open: %v, want ErrLocked naming the directory", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	openStore(t, dir).Close()
}

func TestOpenRefusesSQLiteDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "dedup.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := pebblestore.Open(context.Background(), dir, pebblestore.Options{})
	if err == nil || !strings.Contains(err.Error(), "holds a SQLite store") {
		t.Fatalf("Open on a SQLite directory: %v, want a refusal naming it", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pebble")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused Open created a Pebble directory beside the SQLite store (%v)", err)
	}
}

// The format version is written at creation and checked at every Open: a
// directory of another version, or a Pebble database dedupd did not write,
// is refused, and nothing in it changes.
func TestOpenChecksFormatVersion(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(db *pebble.DB) error
	}{
		{"newer version", func(db *pebble.DB) error { return db.Set([]byte("\x00format"), []byte("2"), pebble.Sync) }},
		{"no version", func(db *pebble.DB) error {
			if err := db.Delete([]byte("\x00format"), pebble.Sync); err != nil {
				return err
			}
			return db.Set([]byte("someone else's"), []byte("data"), pebble.Sync)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir)
			claim(t, s, "k")
			s.Close()
			db, err := pebble.Open(filepath.Join(dir, "pebble"), &pebble.Options{Logger: quietLogger{}})
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.write(db); err != nil {
				t.Fatal(err)
			}
			db.Close()
			_, err = pebblestore.Open(context.Background(), dir, pebblestore.Options{})
			if !errors.Is(err, pebblestore.ErrUnknownFormat) {
				t.Fatalf("Open: %v, want ErrUnknownFormat", err)
			}
			t.Logf("refused with: %v", err)
		})
	}
	dir := t.TempDir()
	openStore(t, dir).Close()
	db, err := pebble.Open(filepath.Join(dir, "pebble"), &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	v, closer, err := db.Get([]byte("\x00format"))
	if err != nil || string(v) != "1" {
		t.Fatalf("a new store's format key = %q, %v; want \"1\"", v, err)
	}
	closer.Close()
	db.Close()
}

// killChildEnv, when set, makes TestCompleteSurvivesKill act as the child:
// complete keys in the directory it names, say so, and wait to be killed.
const killChildEnv = "PEBBLESTORE_TEST_KILL_CHILD_DIR"

// An acknowledged write survives kill -9 of the process holding the store
// open: with pebble.Sync it is in the synced WAL before the call returns.
// The child acknowledges a batch and lone writes, then is killed mid-run.
func TestCompleteSurvivesKill(t *testing.T) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		s := openStore(t, dir)
		res := claim(t, s, "k")
		complete(t, s, "k", res.Record.FencingToken, "acknowledged")
		var cmds []store.Command
		for i := range 50 {
			cmds = append(cmds, store.ClaimParams{Consumer: "c", Key: fmt.Sprint("batch-", i), Digest: []byte("d"), Policy: policy})
		}
		for _, r := range s.ApplyBatch(context.Background(), store.BatchParams{Commands: cmds}) {
			if r.Err != nil || r.Outcome != store.Acquired {
				fmt.Println("batch failed:", r.Err)
				os.Exit(2)
			}
		}
		sp := store.StreamPolicy{DefaultLeaseTTL: time.Hour}
		if _, err := s.ClaimStream(context.Background(), store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 1, Policy: sp}); err != nil {
			fmt.Println("claim stream failed:", err)
			os.Exit(2)
		}
		for seq := int64(2); seq <= 4; seq++ {
			if _, err := s.ClaimStream(context.Background(), store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: seq,
				Park: true, Payload: []byte(fmt.Sprint("p", seq)), Policy: sp}); err != nil {
				fmt.Println("park failed:", err)
				os.Exit(2)
			}
		}
		fmt.Println("completed")
		time.Sleep(time.Minute) // killed here, with the store open
	}
	dir := storetest.KillChildAfter(t, killChildEnv, "completed")
	s := openStore(t, dir)
	defer s.Close()
	res := claim(t, s, "k")
	if res.Outcome != store.AlreadyCompleted || string(res.Record.Result) != "acknowledged" {
		t.Fatalf("claim after kill -9 = %v %q, want COMPLETED \"acknowledged\"", res.Outcome, res.Record.Result)
	}
	parked, err := s.ListParked(context.Background(), store.ListParkedParams{Consumer: "c", Stream: "s", Limit: 10})
	if err != nil || len(parked) != 3 || parked[0].Sequence != 2 || parked[2].Sequence != 4 {
		t.Fatalf("parked events after kill -9 = %+v, %v; want the acknowledged 2, 3, 4", parked, err)
	}
	for i := range 50 {
		if res := claim(t, s, fmt.Sprint("batch-", i)); res.Outcome != store.InProgress {
			t.Fatalf("batch-%d after kill -9: %v, want IN_PROGRESS (its acknowledged claim kept)", i, res.Outcome)
		}
	}
}

func TestCallsAfterCloseAreUnavailable(t *testing.T) {
	s := openStore(t, t.TempDir())
	res := claim(t, s, "k")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := context.Background()
	calls := map[string]func() error{
		"Claim": func() error {
			_, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: "k", Policy: policy})
			return err
		},
		"Complete": func() error {
			_, err := s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: "k", FencingToken: res.Record.FencingToken, Policy: policy})
			return err
		},
		"Lookup":        func() error { _, err := s.Lookup(ctx, "c", "k"); return err },
		"DeleteExpired": func() error { _, err := s.DeleteExpired(ctx, 10); return err },
		"Ping":          func() error { return s.Ping(ctx) },
		"Stats":         func() error { _, err := s.Stats(ctx, ""); return err },
		"ApplyBatch": func() error {
			return s.ApplyBatch(ctx, store.BatchParams{Commands: []store.Command{store.ClaimParams{Consumer: "c", Key: "x"}}})[0].Err
		},
		"ClaimStream": func() error {
			_, err := s.ClaimStream(ctx, store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 1})
			return err
		},
		"PutPolicy": func() error { _, err := s.PutPolicy(ctx, store.ConsumerPolicy{Consumer: "c"}); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s after Close: %v, want ErrUnavailable", name, err)
		}
	}
}

// quietLogger keeps Pebble's informational lines out of the test's output.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)         {}
func (quietLogger) Errorf(f string, args ...any) { pebble.DefaultLogger.Errorf(f, args...) }
func (quietLogger) Fatalf(f string, args ...any) { pebble.DefaultLogger.Fatalf(f, args...) }
