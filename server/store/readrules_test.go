package store_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The read rules on hand-computed cases at their boundaries; the SQL stores
// are held to the same rules by internal/sqlreadtest.

var (
	ruleNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	us      = time.Microsecond
	made    = ruleNow.Add(-time.Hour)
)

// ruleRecord is a live Completed record c/ab made and changed at made,
// expiring a microsecond after ruleNow; with changes it is another.
func ruleRecord(changes ...func(*store.Record)) *store.Record {
	r := &store.Record{Consumer: "c", Key: "ab", State: store.Completed, CreatedAt: made, UpdatedAt: made,
		LeaseExpiresAt: ruleNow, ExpiresAt: ruleNow.Add(us)}
	for _, change := range changes {
		change(r)
	}
	return r
}

func expiringAt(t time.Time) func(*store.Record) { return func(r *store.Record) { r.ExpiresAt = t } }
func pendingUntil(t time.Time) func(*store.Record) {
	return func(r *store.Record) { r.State, r.LeaseExpiresAt = store.Pending, t }
}

func TestListParamsMatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    store.ListParams
		r    *store.Record
		want bool
	}{
		{"no filter", store.ListParams{Consumer: "c"}, ruleRecord(), true},
		{"other consumer", store.ListParams{Consumer: "d"}, ruleRecord(), false},
		{"expires now", store.ListParams{Consumer: "c"}, ruleRecord(expiringAt(ruleNow)), false},
		{"after its key", store.ListParams{Consumer: "c", AfterKey: "ab"}, ruleRecord(), false},
		{"after a key before", store.ListParams{Consumer: "c", AfterKey: "aa\U0010FFFF"}, ruleRecord(), true},
		{"prefix", store.ListParams{Consumer: "c", KeyPrefix: "a"}, ruleRecord(), true},
		{"prefix is the key", store.ListParams{Consumer: "c", KeyPrefix: "ab"}, ruleRecord(), true},
		{"prefix _ is no wildcard", store.ListParams{Consumer: "c", KeyPrefix: "a_"}, ruleRecord(), false},
		{"prefix % is no wildcard", store.ListParams{Consumer: "c", KeyPrefix: "%"}, ruleRecord(), false},
		{"prefix is case-sensitive", store.ListParams{Consumer: "c", KeyPrefix: "A"}, ruleRecord(), false},
		{"state listed", store.ListParams{Consumer: "c", States: []store.State{store.Pending, store.Completed}}, ruleRecord(), true},
		{"state not listed", store.ListParams{Consumer: "c", States: []store.State{store.Pending}}, ruleRecord(), false},
		{"created after, inclusive", store.ListParams{Consumer: "c", CreatedAfter: made}, ruleRecord(), true},
		{"created after, a microsecond on", store.ListParams{Consumer: "c", CreatedAfter: made.Add(us)}, ruleRecord(), false},
		{"created after, within the microsecond", store.ListParams{Consumer: "c", CreatedAfter: made.Add(us / 2)}, ruleRecord(), true},
		{"created before, exclusive", store.ListParams{Consumer: "c", CreatedBefore: made}, ruleRecord(), false},
		{"created before, a microsecond on", store.ListParams{Consumer: "c", CreatedBefore: made.Add(us)}, ruleRecord(), true},
		{"updated before, within the microsecond", store.ListParams{Consumer: "c", UpdatedBefore: made.Add(us / 2)}, ruleRecord(), false},
		{"updated after, a microsecond on", store.ListParams{Consumer: "c", UpdatedAfter: made.Add(us)}, ruleRecord(), false},
		{"lease expired, not pending", store.ListParams{Consumer: "c", LeaseExpired: true}, ruleRecord(), false},
		{"lease expired now", store.ListParams{Consumer: "c", LeaseExpired: true}, ruleRecord(pendingUntil(ruleNow)), true},
		{"lease expires later", store.ListParams{Consumer: "c", LeaseExpired: true}, ruleRecord(pendingUntil(ruleNow.Add(us))), false},
	} {
		if got := tc.p.Matches(tc.r, ruleNow); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPurgeParamsMatches(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    store.PurgeParams
		r    *store.Record
		want bool
	}{
		{"consumer", store.PurgeParams{Consumer: "c"}, ruleRecord(), true},
		{"other consumer", store.PurgeParams{Consumer: "d"}, ruleRecord(), false},
		{"any consumer, expired now", store.PurgeParams{ExpiredOnly: true}, ruleRecord(expiringAt(ruleNow)), true},
		{"any consumer, live", store.PurgeParams{ExpiredOnly: true}, ruleRecord(), false},
		{"state", store.PurgeParams{Consumer: "c", States: []store.State{store.Rejected}}, ruleRecord(), false},
		{"updated before, exclusive", store.PurgeParams{Consumer: "c", UpdatedBefore: made}, ruleRecord(), false},
		{"updated before, within the microsecond", store.PurgeParams{Consumer: "c", UpdatedBefore: made.Add(us / 2)}, ruleRecord(), false},
		{"updated before, a microsecond on", store.PurgeParams{Consumer: "c", UpdatedBefore: made.Add(us)}, ruleRecord(), true},
	} {
		if got := tc.p.Matches(tc.r, ruleNow); got != tc.want {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStatsOf(t *testing.T) {
	older := func(r *store.Record) { r.UpdatedAt = made.Add(-us) }
	oldest := func(r *store.Record) { r.UpdatedAt = made.Add(-2 * us) }
	d := func(r *store.Record) { r.Consumer = "d" }
	recs := []store.Record{
		*ruleRecord(),                                                   // c: Completed
		*ruleRecord(pendingUntil(ruleNow)),                              // c: Pending, lease run out
		*ruleRecord(pendingUntil(ruleNow.Add(us)), older),               // c: Pending, the oldest
		*ruleRecord(pendingUntil(ruleNow), oldest, expiringAt(ruleNow)), // c: Expired only
		*ruleRecord(d, func(r *store.Record) { r.State = store.Rejected }),
		*ruleRecord(d, func(r *store.Record) { r.State = store.Released }),
	}
	want := []store.ConsumerStats{
		{Consumer: "c", Pending: 2, Completed: 1, PendingLeaseExpired: 1, OldestPendingAt: made.Add(-us), Expired: 1},
		{Consumer: "d", Rejected: 1, Released: 1},
	}
	if got := store.StatsOf(recs, "", ruleNow); !reflect.DeepEqual(got, want) {
		t.Errorf("StatsOf\n got %+v\nwant %+v", got, want)
	}
	if got := store.StatsOf(recs, "d", ruleNow); !reflect.DeepEqual(got, want[1:]) {
		t.Errorf("StatsOf(d)\n got %+v\nwant %+v", got, want[1:])
	}
}

func TestParkedReady(t *testing.T) {
	ready := func() *store.Stream {
		return &store.Stream{Mode: store.Dense, HighWater: 4, Parked: 1, ExpiresAt: ruleNow.Add(us)}
	}
	for _, tc := range []struct {
		name string
		s    *store.Stream
		next bool
		want bool
	}{
		{"idle, next parked", ready(), true, true},
		{"next not parked", ready(), false, false},
		{"no stream", nil, true, false},
		{"expires now", func() *store.Stream { s := ready(); s.ExpiresAt = ruleNow; return s }(), true, false},
		{"versions", func() *store.Stream { s := ready(); s.Mode = store.Versions; return s }(), true, false},
		{"none parked", func() *store.Stream { s := ready(); s.Parked = 0; return s }(), true, false},
		{"lease live", func() *store.Stream { s := ready(); s.InFlight, s.LeaseExpiresAt = 5, ruleNow.Add(us); return s }(), true, false},
		{"lease run out now", func() *store.Stream { s := ready(); s.InFlight, s.LeaseExpiresAt = 5, ruleNow; return s }(), true, true},
	} {
		if got := store.ParkedReady(tc.s, tc.next, ruleNow); got != tc.want {
			t.Errorf("%s: ParkedReady = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestLeaseTally: held and expired counted per consumer (a lease ending
// now has expired), the oldest update kept, consumers in order.
func TestLeaseTally(t *testing.T) {
	tally := store.LeaseTally{}
	tally.Add("b", made, ruleNow.Add(us), ruleNow)
	tally.Add("a", made.Add(time.Second), ruleNow, ruleNow)
	tally.Add("a", made, ruleNow.Add(-us), ruleNow)
	tally.Add("a", made.Add(time.Minute), ruleNow.Add(time.Hour), ruleNow)
	want := []store.LeaseStats{
		{Consumer: "a", Held: 3, Expired: 2, OldestUpdatedAt: made},
		{Consumer: "b", Held: 1, Expired: 0, OldestUpdatedAt: made},
	}
	if got := tally.Sorted(); !reflect.DeepEqual(got, want) {
		t.Errorf("Sorted\n got %+v\nwant %+v", got, want)
	}
}
