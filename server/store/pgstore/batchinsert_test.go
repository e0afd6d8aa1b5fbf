package pgstore_test

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// A round's fresh claims are inserted before Apply has seen their rows;
// the answers, and the rows stored, must still be exactly what store.Apply
// decides, item by item, on the records as they were before the batch:
// a fresh key at the clock of the insert (the fresh records' creation
// time), a key that has a row at the clock of the read that followed (the
// update time of the lapsed lease's takeover), which is not earlier.
//
// With a fresh claim whose lease differs from the others', the claims go
// into the insert as nine arrays; without it, they share all but keys and
// digests, and go in as two arrays and single values.
func TestFreshBatchIsApply(t *testing.T) {
	for _, tc := range []struct {
		name     string
		oddLease bool
	}{{"claims differ", true}, {"claims share", false}} {
		t.Run(tc.name, func(t *testing.T) { testFreshBatchIsApply(t, tc.oddLease) })
	}
}

func testFreshBatchIsApply(t *testing.T, oddLease bool) {
	ctx := context.Background()
	s := newStore(t)
	mustClaim := func(p store.ClaimParams) store.Record {
		r, err := s.Claim(ctx, p)
		if err != nil || r.Outcome != store.Acquired {
			t.Fatalf("setup claim of %s: %v, %v", p.Key, r.Outcome, err)
		}
		return r.Record
	}
	done := mustClaim(claimParams("done"))
	if _, err := s.Complete(ctx, store.CompleteParams{Consumer: "billing", Key: "done",
		FencingToken: done.FencingToken, Result: []byte("ok"), Policy: policy}); err != nil {
		t.Fatal(err)
	}
	mustClaim(claimParams("held"))
	lapsed := claimParams("lapsed")
	lapsed.LeaseTTL = time.Microsecond
	mustClaim(lapsed)
	time.Sleep(2 * time.Millisecond) // past the 1 µs lease; its record lives on for ReleasedTTL

	withLease := func(key string, ttl time.Duration) store.ClaimParams {
		p := claimParams(key)
		p.LeaseTTL = ttl
		return p
	}
	noDigest := claimParams("fresh-no-digest")
	noDigest.Digest = nil
	otherDigest := claimParams("done")
	otherDigest.Digest = []byte("another")
	odd := claimParams("fresh-odd-lease")
	if oddLease {
		odd = withLease("fresh-odd-lease", 1500*time.Millisecond+700*time.Nanosecond) // not whole microseconds
	}
	cmds := []store.Command{
		claimParams("fresh-default-lease"),
		odd,
		noDigest,
		store.CompleteParams{Consumer: "billing", Key: "absent", FencingToken: 1, Result: []byte("x"), Policy: policy},
		claimParams("done"),
		otherDigest,
		claimParams("held"),
		claimParams("lapsed"),
		claimParams("fresh-default-lease"), // the same key again: the next round
	}
	before := map[string]*store.Record{}
	for _, cmd := range cmds {
		_, key := store.KeyOf(cmd)
		if rec, err := s.Lookup(ctx, "billing", key); err == nil {
			before[key] = &rec
		} else if !errors.Is(err, store.ErrNotFound) {
			t.Fatal(err)
		}
	}

	got := s.ApplyBatch(ctx, store.BatchParams{Commands: cmds})

	first := got[0]
	if first.Err != nil || first.Outcome != store.Acquired {
		t.Fatalf("first fresh claim: %v, %v", first.Outcome, first.Err)
	}
	now := first.Record.CreatedAt // the insert's clock
	lapsedAt := slices.IndexFunc(cmds, func(c store.Command) bool { _, k := store.KeyOf(c); return k == "lapsed" })
	read := got[lapsedAt].Record.UpdatedAt // the read's clock
	if got[lapsedAt].Outcome != store.Acquired || read.Before(now) {
		t.Fatalf("lapsed key: %v at %v, want a takeover no earlier than the insert at %v", got[lapsedAt].Outcome, read, now)
	}
	model := map[string]*store.Record{}
	maps.Copy(model, before)
	for i, cmd := range cmds {
		_, key := store.KeyOf(cmd)
		at := read
		if before[key] == nil && i < len(cmds)-1 { // inserted, or refused whatever the clock
			at = now
		}
		if i == len(cmds)-1 { // the next round reads the row again, at a later clock
			at = read.Add(time.Millisecond)
		}
		d, err := store.Apply(model[key], cmd, at)
		want := store.ResultOf(d, err)
		if i == len(cmds)-1 {
			want.RetryAfter = got[i].RetryAfter // depends on the second round's clock
		}
		if !reflect.DeepEqual(got[i], want) {
			t.Errorf("item %d (%T %s):\n got  %+v\n want %+v", i, cmd, key, got[i], want)
		}
		if err == nil && d.Write {
			rec := d.Record
			model[key] = &rec
		}
	}
	for key, want := range model {
		stored, err := s.Lookup(ctx, "billing", key)
		if err != nil || !reflect.DeepEqual(bytesNormal(stored), bytesNormal(*want)) {
			t.Errorf("stored %s = %+v, %v\n want %+v", key, stored, err, *want)
		}
	}
}

// A key inserted by another writer before a round's insert committed:
// the insert waits for that writer, and the key is then decided on what
// the writer left (committed: a row Apply must see, which the round reads;
// rolled back: the key is free and the one statement's insert stands).
func TestFreshBatchRacesAnInsert(t *testing.T) {
	for _, tc := range []struct {
		name           string
		commit         bool
		wantOutcome    store.Outcome
		wantStatements int
		// At SERIALIZABLE (CockroachDB's isolation) the insert that waited
		// for a committed writer of one of its keys fails with 40001
		// instead of skipping the key, and is sent again: one statement
		// more. At READ COMMITTED it skips the key.
		wantSerializable int
	}{
		{"other writer commits", true, store.InProgress, 2, 3},
		{"other writer rolls back", false, store.Acquired, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			var log statementLog
			s := newTracedStore(t, &log)
			pool := pgstore.Pool(s)

			tx, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, `INSERT INTO dedup_records (consumer, key, state, digest, fencing_token, attempts,
    owner, created_at, updated_at, lease_expires_at, expires_at)
VALUES ('billing', 'k2', 'PENDING', 'digest-k2', 7, 1, 'other', now(), now(), now() + interval '1 hour', now() + interval '2 hours')`); err != nil {
				t.Fatal(err)
			}
			var otherPID int
			if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&otherPID); err != nil {
				t.Fatal(err)
			}
			log.take()
			cmds := []store.Command{claimParams("k1"), claimParams("k2"), claimParams("k3")}
			answer := make(chan []store.ItemResult, 1)
			go func() { answer <- s.ApplyBatch(ctx, store.BatchParams{Commands: cmds}) }()
			waitForLockWaiter(t, pool, otherPID, answer)
			if tc.commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := <-answer
			for i, key := range []string{"k1", "k2", "k3"} {
				want := store.Acquired
				if key == "k2" {
					want = tc.wantOutcome
				}
				if got[i].Err != nil || got[i].Outcome != want {
					t.Errorf("%s: %v, %v; want %v", key, got[i].Outcome, got[i].Err, want)
				}
			}
			if tc.commit && got[1].Record.Owner != "other" {
				t.Errorf("k2 answered from %+v, not the other writer's row", got[1].Record)
			}
			var batchSQL []string
			for _, sql := range log.take() {
				if strings.Contains(sql, "dedup_records") {
					batchSQL = append(batchSQL, sql)
				}
			}
			want := tc.wantStatements
			if isolation(t, pool) == "serializable" {
				want = tc.wantSerializable
			}
			wantStatements(t, "the batch at "+isolation(t, pool), batchSQL, want)
		})
	}
}

// bytesNormal makes an empty digest or result nil: the database stores no
// digest as an empty one, which Lookup reads back non-nil.
func bytesNormal(r store.Record) store.Record {
	if len(r.Digest) == 0 {
		r.Digest = nil
	}
	if len(r.Result) == 0 {
		r.Result = nil
	}
	return r
}

// waitForLockWaiter returns once some session is waiting for a lock held
// by the session pid; it fails the test if the batch answers first, since
// then its insert did not wait for the other writer's key.
func waitForLockWaiter(t *testing.T, pool *pgxpool.Pool, pid int, answer chan []store.ItemResult) {
	t.Helper()
	for {
		select {
		case got := <-answer:
			t.Fatalf("the batch answered %+v without waiting for the other writer", got)
		default:
		}
		var waiting bool
		if err := pool.QueryRow(context.Background(),
			`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))`, pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
