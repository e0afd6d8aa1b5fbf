package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func purgeTests() []test {
	return []test{
		{"DeleteRecordLive", testDeleteRecordLive},
		{"DeleteRecordFencesOldHolder", testDeleteRecordFencesOldHolder},
		{"DeleteRecordMissing", testDeleteRecordMissing},
		{"CountPurge", testCountPurge},
		{"PurgeBatches", testPurgeBatches},
		{"PurgeExpiredOnly", testPurgeExpiredOnly},
		{"PurgeRefused", testPurgeRefused},
		{"Stats", testStats},
	}
}

func deleteRecord(t *testing.T, s store.Store, consumer, key string) store.Record {
	t.Helper()
	r, err := s.DeleteRecord(t.Context(), consumer, key)
	if err != nil {
		t.Fatalf("DeleteRecord(%q, %q): %v", consumer, key, err)
	}
	checkNormal(t, "DeleteRecord", r)
	return r
}

func stats(t *testing.T, s store.Store, consumer string) []store.ConsumerStats {
	t.Helper()
	st, err := s.Stats(t.Context(), consumer)
	if err != nil {
		t.Fatalf("Stats(%q): %v", consumer, err)
	}
	return st
}

// statsOf returns the one consumer's stats; zero counts when it has none.
func statsOf(t *testing.T, s store.Store, consumer string) store.ConsumerStats {
	t.Helper()
	st := stats(t, s, consumer)
	switch len(st) {
	case 0:
		return store.ConsumerStats{Consumer: consumer}
	case 1:
		return st[0]
	}
	t.Fatalf("Stats(%q) returned %d consumers", consumer, len(st))
	return store.ConsumerStats{}
}

// Deleting a live record, in any state, returns it and makes the key
// absent; the next claim starts it afresh with the next fencing token.
func testDeleteRecordLive(t *testing.T, s store.Store) {
	for _, state := range []store.State{store.Pending, store.Completed, store.Rejected, store.Released} {
		t.Run(string(state), func(t *testing.T) {
			key := "key-" + string(state)
			before := makeIn(t, s, consumer, key, state)
			other := makeIn(t, s, "billing", key, state)
			got := deleteRecord(t, s, consumer, key)
			if got.ExpiresAt.Before(before.UpdatedAt) || !got.ExpiresAt.Before(before.ExpiresAt) {
				t.Errorf("deleted record expires at %v, want between its last write %v and its old expiry %v",
					got.ExpiresAt, before.UpdatedAt, before.ExpiresAt)
			}
			got.ExpiresAt = before.ExpiresAt
			wantSame(t, "DeleteRecord's record", got, before)

			wantNotFound(t, s, consumer, key)
			if keys := listKeys(t, s, store.ListParams{Consumer: consumer, KeyPrefix: key, Limit: 10}); len(keys) != 0 {
				t.Errorf("ListRecords still lists the deleted key: %q", keys)
			}
			if _, err := s.DeleteRecord(t.Context(), consumer, key); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("second DeleteRecord: %v, want ErrNotFound", err)
			}
			wantUnchanged(t, s, other)

			fresh := acquire(t, s, claimP(key))
			if fresh.FencingToken != before.FencingToken+1 || fresh.Attempts != 1 || fresh.Result != nil {
				t.Errorf("claim after delete: token %d, attempts %d, result %q; want token %d, attempts 1, no result",
					fresh.FencingToken, fresh.Attempts, fresh.Result, before.FencingToken+1)
			}
		})
	}
}

// The holder of a deleted lease loses it, and cannot pass for the holder of
// the key's next lease.
func testDeleteRecordFencesOldHolder(t *testing.T, s store.Store) {
	old := acquire(t, s, claimP("k"))
	deleteRecord(t, s, consumer, "k")
	_, err := s.Complete(t.Context(), completeP(old, []byte("late")))
	wantErr(t, "Complete by the deleted holder", err, store.ErrLeaseLost, nil)
	_, err = s.ExtendLease(t.Context(), extendP(old, longTTL))
	wantErr(t, "ExtendLease by the deleted holder", err, store.ErrLeaseLost, nil)

	next := acquire(t, s, claimP("k"))
	_, err = s.Complete(t.Context(), completeP(old, []byte("late")))
	wantErr(t, "Complete by the deleted holder after a new claim", err, store.ErrLeaseLost, &next)
	wantUnchanged(t, s, next)
	complete(t, s, completeP(next, []byte("new")))
}

// An absent or expired key is ErrNotFound, and an expired row is left as it
// was, for the reaper.
func testDeleteRecordMissing(t *testing.T, s store.Store) {
	if r, err := s.DeleteRecord(t.Context(), consumer, "never"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("DeleteRecord of an absent key = %+v, %v; want ErrNotFound", r, err)
	}
	expired := makeExpired(t, s, "gone", 1)
	for _, r := range expired {
		if got, err := s.DeleteRecord(t.Context(), r.Consumer, r.Key); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("DeleteRecord of expired %q = %+v, %v; want ErrNotFound", r.Key, got, err)
		}
	}
	if got := statsOf(t, s, consumer).Expired; got != int64(len(expired)) {
		t.Errorf("Stats counts %d expired records, want %d", got, len(expired))
	}
	if n, err := s.DeleteExpired(t.Context(), 100); err != nil || n != len(expired) {
		t.Errorf("DeleteExpired = %d, %v; want %d", n, err, len(expired))
	}
}

// purgeFixture: in "orders", 5 completed, 3 rejected and 2 pending records
// made early, then 4 completed made later (after the returned cutoff), and
// the 4 expired records of makeExpired; in "billing", 3 completed and 4
// expired.
func purgeFixture(t *testing.T, s store.Store) (cutoff time.Time) {
	t.Helper()
	for i := range 5 {
		makeIn(t, s, consumer, fmt.Sprintf("old-c%d", i), store.Completed)
	}
	for i := range 3 {
		makeIn(t, s, consumer, fmt.Sprintf("old-r%d", i), store.Rejected)
	}
	for i := range 2 {
		makeIn(t, s, consumer, fmt.Sprintf("old-p%d", i), store.Pending)
	}
	for i := range 3 {
		makeIn(t, s, "billing", fmt.Sprintf("b%d", i), store.Completed)
	}
	time.Sleep(2 * time.Millisecond)
	cutoff = makeIn(t, s, consumer, "new-c0", store.Completed).UpdatedAt
	for i := 1; i < 4; i++ {
		makeIn(t, s, consumer, fmt.Sprintf("new-c%d", i), store.Completed)
	}
	for _, setup := range expiredSetups {
		setup.setup(t, s, "exp-"+setup.name)
		p := shortClaim("exp-" + setup.name)
		p.Consumer = "billing"
		acquire(t, s, p)
	}
	sleepPast(2 * shortTTL)
	return cutoff
}

func testCountPurge(t *testing.T, s store.Store) {
	cutoff := purgeFixture(t, s)
	for _, tc := range []struct {
		name string
		p    store.PurgeParams
		want int64
	}{
		{"whole consumer", store.PurgeParams{Consumer: consumer}, 18},
		{"other consumer", store.PurgeParams{Consumer: "billing"}, 7},
		{"unknown consumer", store.PurgeParams{Consumer: "nobody"}, 0},
		// The expired completed record has state COMPLETED too.
		{"completed", store.PurgeParams{Consumer: consumer, States: []store.State{store.Completed}}, 10},
		{"rejected or pending", store.PurgeParams{Consumer: consumer, States: []store.State{store.Rejected, store.Pending}}, 7},
		{"older than the cutoff", store.PurgeParams{Consumer: consumer, UpdatedBefore: cutoff}, 10},
		{"completed, older than the cutoff", store.PurgeParams{Consumer: consumer, States: []store.State{store.Completed}, UpdatedBefore: cutoff}, 5},
		{"expired, one consumer", store.PurgeParams{Consumer: consumer, ExpiredOnly: true}, 4},
		{"expired, every consumer", store.PurgeParams{ExpiredOnly: true}, 8},
		{"expired released, every consumer", store.PurgeParams{ExpiredOnly: true, States: []store.State{store.Released}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.CountPurge(t.Context(), tc.p)
			if err != nil || got != tc.want {
				t.Errorf("CountPurge = %d, %v; want %d", got, err, tc.want)
			}
			// Limit only bounds PurgeBatch.
			tc.p.Limit = 1
			if got, err := s.CountPurge(t.Context(), tc.p); err != nil || got != tc.want {
				t.Errorf("CountPurge with Limit 1 = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

// Purging in batches deletes exactly what CountPurge counted, at most Limit
// per batch, and nothing else.
func testPurgeBatches(t *testing.T, s store.Store) {
	purgeFixture(t, s)
	billing := statsOf(t, s, "billing")
	p := store.PurgeParams{Consumer: consumer, States: []store.State{store.Completed}, Limit: 3}
	want, err := s.CountPurge(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	var batches []int
	for {
		n, err := s.PurgeBatch(t.Context(), p)
		if err != nil {
			t.Fatalf("PurgeBatch: %v", err)
		}
		if n == 0 {
			break
		}
		batches = append(batches, n)
		if len(batches) > 10 {
			t.Fatalf("purge does not end: batches %v", batches)
		}
	}
	if fmt.Sprint(batches) != "[3 3 3 1]" || want != 10 {
		t.Errorf("batches %v of a purge counted at %d, want [3 3 3 1] of 10", batches, want)
	}
	if n, err := s.CountPurge(t.Context(), p); err != nil || n != 0 {
		t.Errorf("CountPurge after the purge = %d, %v; want 0", n, err)
	}
	got := statsOf(t, s, consumer)
	// Left: 3 rejected, 2 pending live; the expired pending, rejected and
	// released records.
	if got.Completed != 0 || got.Rejected != 3 || got.Pending != 2 || got.Expired != 3 {
		t.Errorf("orders after purging completed: %+v", got)
	}
	if after := statsOf(t, s, "billing"); after != billing {
		t.Errorf("billing changed: %+v, was %+v", after, billing)
	}
}

// An expired-only purge of every consumer leaves every live record.
func testPurgeExpiredOnly(t *testing.T, s store.Store) {
	purgeFixture(t, s)
	total := 0
	for {
		n, err := s.PurgeBatch(t.Context(), store.PurgeParams{ExpiredOnly: true, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		if n > 5 {
			t.Fatalf("a batch of %d, limit 5", n)
		}
		if n == 0 {
			break
		}
		total += n
	}
	if total != 8 {
		t.Errorf("purged %d expired records, want 8", total)
	}
	want := []store.ConsumerStats{
		{Consumer: "billing", Completed: 3},
		{Consumer: consumer, Completed: 9, Rejected: 3, Pending: 2},
	}
	got := stats(t, s, "")
	for i := range got {
		got[i].OldestPendingAt = time.Time{}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Stats after the purge:\n got %+v\nwant %+v", got, want)
	}
}

func testPurgeRefused(t *testing.T, s store.Store) {
	makeIn(t, s, consumer, "k", store.Completed)
	for name, p := range map[string]store.PurgeParams{
		"no consumer":      {States: []store.State{store.Completed}, Limit: 10},
		"no consumer, all": {Limit: 10},
		"zero limit":       {Consumer: consumer},
	} {
		if n, err := s.PurgeBatch(t.Context(), p); err == nil {
			t.Errorf("%s: PurgeBatch accepted it and deleted %d", name, n)
		}
	}
	if _, err := s.CountPurge(t.Context(), store.PurgeParams{}); err == nil {
		t.Error("CountPurge without a consumer or ExpiredOnly accepted it")
	}
	lookup(t, s, consumer, "k")
}

func testStats(t *testing.T, s store.Store) {
	if st := stats(t, s, ""); len(st) != 0 {
		t.Fatalf("Stats of an empty store: %+v", st)
	}
	p := claimP("p-abandoned")
	p.LeaseTTL = shortTTL
	oldest := acquire(t, s, p)
	time.Sleep(2 * time.Millisecond)
	makeIn(t, s, consumer, "p-live", store.Pending)
	for _, k := range []string{"c1", "c2"} {
		makeIn(t, s, consumer, k, store.Completed)
	}
	makeIn(t, s, consumer, "r1", store.Rejected)
	makeIn(t, s, consumer, "x1", store.Released)
	makeIn(t, s, "billing", "c1", store.Completed)
	acquire(t, s, shortClaim("expired"))
	sleepPast(2 * shortTTL)

	want := store.ConsumerStats{Consumer: consumer, Pending: 2, Completed: 2, Rejected: 1, Released: 1,
		PendingLeaseExpired: 1, OldestPendingAt: oldest.UpdatedAt, Expired: 1}
	got := statsOf(t, s, consumer)
	if !got.OldestPendingAt.Equal(want.OldestPendingAt) {
		t.Errorf("OldestPendingAt %v, want %v", got.OldestPendingAt, want.OldestPendingAt)
	}
	got.OldestPendingAt = want.OldestPendingAt
	if got != want {
		t.Errorf("Stats(%q):\n got %+v\nwant %+v", consumer, got, want)
	}
	all := stats(t, s, "")
	if len(all) != 2 || all[0].Consumer != "billing" || all[1].Consumer != consumer {
		t.Fatalf("Stats of every consumer: %+v; want billing, then %s", all, consumer)
	}
	if b := all[0]; b != (store.ConsumerStats{Consumer: "billing", Completed: 1}) {
		t.Errorf("billing: %+v", b)
	}
	if st := stats(t, s, "nobody"); len(st) != 0 {
		t.Errorf("Stats of a consumer without records: %+v", st)
	}
	// The pending claims alone, summed up as Stats does: the expired
	// claim and billing's completed record are not among them.
	wantLeases(t, "PendingLeases", s.PendingLeases, []store.LeaseStats{
		{Consumer: consumer, Held: 2, Expired: 1, OldestUpdatedAt: oldest.UpdatedAt}})
	wantUnknownKindRefused(t, s)
}
