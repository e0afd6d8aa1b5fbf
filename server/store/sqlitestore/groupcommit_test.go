package sqlitestore_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// groupAnswer is what a command returned, without the times each store's
// clock chose, so that answers from two stores can be compared.
type groupAnswer struct {
	outcome  store.Outcome
	write    bool
	state    store.State
	token    int64
	attempts int64
	result   string
	err      string
}

func groupAnswerOf(d store.Decision, err error) groupAnswer {
	if err != nil {
		if conflict, ok := errors.AsType[*store.ConflictError](err); ok {
			return groupAnswer{err: conflict.Err.Error(), state: conflict.Record.State, token: conflict.Record.FencingToken}
		}
		return groupAnswer{err: err.Error()}
	}
	r := d.Record
	return groupAnswer{outcome: d.Outcome, write: d.Write, state: r.State, token: r.FencingToken,
		attempts: r.Attempts, result: string(r.Result)}
}

func claimCmd(key, digest string) store.ClaimParams {
	return store.ClaimParams{Consumer: "c", Key: key, Digest: []byte(digest), Owner: "w1", Policy: policy}
}

func completeCmd(key string, token int64, result string) store.CompleteParams {
	return store.CompleteParams{Consumer: "c", Key: key, FencingToken: token, Result: []byte(result), Policy: policy}
}

// seedGroupKeys gives a store a pending key and a completed one.
func seedGroupKeys(t *testing.T, s store.Store) {
	t.Helper()
	claim(t, s, "pending", []byte("d"))
	done := claim(t, s, "done", []byte("d"))
	complete(t, s, "done", done.Record.FencingToken, []byte("stored"))
}

// One group answers every command as the same commands run one at a time,
// in queue order, are answered: each sees the writes of those before it
// (a key claimed, then claimed again, then completed, within one
// transaction), refusals refuse without disturbing the others, and a caller
// who gave up before the group ran writes nothing.
func TestGroupCommitAnswersAsOneAtATime(t *testing.T) {
	cmds := []store.Command{
		claimCmd("a", "d"), claimCmd("a", "d"), claimCmd("a", "other"),
		completeCmd("a", 1, "r"), completeCmd("a", 1, "r"), completeCmd("a", 2, "r"),
		claimCmd("a", "d"), claimCmd("pending", "d"), claimCmd("done", "d"),
		completeCmd("done", 1, "different"), claimCmd("cancelled", "d"),
		claimCmd("b", "d"), store.RejectParams{Consumer: "c", Key: "b", FencingToken: 1, Policy: policy,
			Rejection: store.Rejection{Reason: "BUSY", Retryable: true}}, claimCmd("b", "d"),
		claimCmd("pending", "d"), // the last command writes nothing; the group must still commit
	}
	const cancelled = 10

	grouped := newStore(t)
	seedGroupKeys(t, grouped)
	ctxs := make([]context.Context, len(cmds))
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	ctxs[cancelled] = gone
	ds, errs := sqlitestore.ApplyGroup(grouped, ctxs, cmds)

	alone := openStoreWith(t, t.TempDir(), sqlitestore.Options{MaxBatch: 1})
	t.Cleanup(func() { alone.Close() })
	seedGroupKeys(t, alone)
	for i, cmd := range cmds {
		got := groupAnswerOf(ds[i], errs[i])
		if i == cancelled {
			if !errors.Is(errs[i], context.Canceled) {
				t.Errorf("cancelled caller got %+v, want context.Canceled", got)
			}
			continue
		}
		want := groupAnswerOf(runAlone(alone, cmd))
		if _, key := store.KeyOf(cmd); got != want {
			t.Errorf("command %d (%T %s): grouped %+v, alone %+v", i, cmd, key, got, want)
		}
	}
	if _, err := grouped.Lookup(context.Background(), "c", "cancelled"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("cancelled caller's key: Lookup = %v, want ErrNotFound", err)
	}
	// What the group wrote is what was answered.
	for _, key := range []string{"a", "b", "done"} {
		g, errG := grouped.Lookup(context.Background(), "c", key)
		a, errA := alone.Lookup(context.Background(), "c", key)
		if groupAnswerOf(store.Decision{Record: g}, errG) != groupAnswerOf(store.Decision{Record: a}, errA) {
			t.Errorf("%s stored: grouped %+v %v, alone %+v %v", key, g, errG, a, errA)
		}
	}
}

// runAlone runs one command through the store's public methods, giving the
// same shape of answer as a group.
func runAlone(s store.Store, cmd store.Command) (store.Decision, error) {
	ctx := context.Background()
	switch p := cmd.(type) {
	case store.ClaimParams:
		res, err := s.Claim(ctx, p)
		return store.Decision{Record: res.Record, Outcome: res.Outcome, RetryAfter: res.RetryAfter,
			Write: err == nil && res.Outcome == store.Acquired}, err
	case store.CompleteParams:
		before, _ := s.Lookup(ctx, p.Consumer, p.Key)
		rec, err := s.Complete(ctx, p)
		return store.Decision{Record: rec, Write: err == nil && before.State != store.Completed}, err
	case store.RejectParams:
		rec, err := s.Reject(ctx, p)
		return store.Decision{Record: rec, Write: err == nil}, err
	}
	panic("unexpected command")
}

// A write that the database refuses fails only its own caller: the group
// is run again without it, and everyone else's write commits and is
// answered as if the failing one had never been queued. A trigger plays the
// database refusing one key (as a full disk or a constraint might).
func TestGroupCommitDatabaseErrorFailsOnlyItsCaller(t *testing.T) {
	dir := t.TempDir()
	s := openStoreWith(t, dir, sqlitestore.Options{})
	t.Cleanup(func() { s.Close() })
	seedGroupKeys(t, s)
	db, err := sql.Open("sqlite", filepath.Join(dir, "dedup.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER poison BEFORE INSERT ON dedup_records
		WHEN NEW.key = 'poison' BEGIN SELECT RAISE(ABORT, 'poisoned key'); END`); err != nil {
		t.Fatal(err)
	}

	cmds := []store.Command{
		claimCmd("a", "d"), claimCmd("poison", "d"), completeCmd("pending", 1, "r"), claimCmd("b", "d"),
	}
	ctxs := []context.Context{context.Background(), context.Background(), context.Background(), context.Background()}
	ds, errs := sqlitestore.ApplyGroup(s, ctxs, cmds)

	if errs[1] == nil || !strings.Contains(errs[1].Error(), "poisoned key") {
		t.Fatalf("the refused write got %v, want the database's error", errs[1])
	}
	for _, i := range []int{0, 2, 3} {
		if _, key := store.KeyOf(cmds[i]); errs[i] != nil {
			t.Fatalf("command %d (%s) failed with its group-mate's error: %v", i, key, errs[i])
		}
	}
	if ds[0].Outcome != store.Acquired || ds[3].Outcome != store.Acquired || ds[2].Record.State != store.Completed {
		t.Fatalf("answers %v %v %v, want ACQUIRED, COMPLETED, ACQUIRED", ds[0].Outcome, ds[2].Record.State, ds[3].Outcome)
	}
	ctx := context.Background()
	for key, want := range map[string]store.State{"a": store.Pending, "pending": store.Completed, "b": store.Pending} {
		rec, err := s.Lookup(ctx, "c", key)
		if err != nil || rec.State != want {
			t.Errorf("%s after the group: %v %v, want %s: an answered write did not commit", key, rec.State, err, want)
		}
	}
	if _, err := s.Lookup(ctx, "c", "poison"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the refused key: Lookup = %v, want ErrNotFound", err)
	}
}
