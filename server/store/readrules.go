package store

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// The rules of the read side, as Apply is the rule of every write: which
// records a listing or a purge selects, how Stats counts a record, and
// which parked event ClaimParked may hand out. Pebble runs them on each
// decoded row; the SQL stores write them as WHERE clauses and CASE
// expressions, which oracle tests (internal/sqlreadtest) hold to these.
// Times are compared at the stores' precision: a bound is taken to the
// microsecond (Now), as the SQL stores bind it.

// Matches reports whether ListRecords(p) selects r at time now, its Limit
// aside: a live record of p.Consumer after p.AfterKey that passes every
// filter. Keys compare bytewise.
func (p ListParams) Matches(r *Record, now time.Time) bool {
	now = Now(now)
	return r.Consumer == p.Consumer && r.Key > p.AfterKey && IsLive(r, now) &&
		hasState(p.States, r.State) &&
		strings.HasPrefix(r.Key, p.KeyPrefix) &&
		inRange(r.CreatedAt, p.CreatedAfter, p.CreatedBefore) &&
		inRange(r.UpdatedAt, p.UpdatedAfter, p.UpdatedBefore) &&
		(!p.LeaseExpired || r.State == Pending && !now.Before(r.LeaseExpiresAt))
}

// Matches reports whether PurgeBatch(p) and CountPurge(p) select r at time
// now, live or not.
func (p PurgeParams) Matches(r *Record, now time.Time) bool {
	return (p.Consumer == "" || r.Consumer == p.Consumer) &&
		hasState(p.States, r.State) &&
		(p.UpdatedBefore.IsZero() || r.UpdatedAt.Before(Now(p.UpdatedBefore))) &&
		(!p.ExpiredOnly || !IsLive(r, now))
}

// hasState is the state filter: no states selects every one.
func hasState(states []State, s State) bool {
	return len(states) == 0 || slices.Contains(states, s)
}

// inRange is a time filter: after inclusive, before exclusive, a zero
// bound open.
func inRange(t, after, before time.Time) bool {
	return (after.IsZero() || !t.Before(Now(after))) && (before.IsZero() || t.Before(Now(before)))
}

// Count adds r, a record of c.Consumer, to c as Stats counts it at time now:
// a record past its expiry counts as Expired only, a live one under its
// state, and a live Pending one's lease and age besides.
func (c *ConsumerStats) Count(r *Record, now time.Time) {
	now = Now(now)
	if !IsLive(r, now) {
		c.Expired++
		return
	}
	switch r.State {
	case Pending:
		c.Pending++
		if !now.Before(r.LeaseExpiresAt) {
			c.PendingLeaseExpired++
		}
		if c.OldestPendingAt.IsZero() || r.UpdatedAt.Before(c.OldestPendingAt) {
			c.OldestPendingAt = r.UpdatedAt
		}
	case Completed:
		c.Completed++
	case Rejected:
		c.Rejected++
	case Released:
		c.Released++
	}
}

// StatsOf is Stats(consumer) over recs at time now: the counts of each
// consumer with a record (only consumer's when it is not empty), in
// bytewise consumer order.
func StatsOf(recs []Record, consumer string, now time.Time) []ConsumerStats {
	byConsumer := map[string]*ConsumerStats{}
	for i := range recs {
		r := &recs[i]
		if consumer != "" && r.Consumer != consumer {
			continue
		}
		c := byConsumer[r.Consumer]
		if c == nil {
			c = &ConsumerStats{Consumer: r.Consumer}
			byConsumer[r.Consumer] = c
		}
		c.Count(r, now)
	}
	var out []ConsumerStats
	for _, c := range byConsumer {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b ConsumerStats) int { return cmp.Compare(a.Consumer, b.Consumer) })
	return out
}

// ReadyCandidates bounds how many streams one ClaimParked of any stream
// tries.
const ReadyCandidates = 16

// ParkedReady reports whether ClaimParked of any stream of s's consumer may
// pick s at time now: a live dense stream with events parked, no live lease
// on it, and, nextParked, an event parked at HighWater+1, the one a claim
// would hand out.
func ParkedReady(s *Stream, nextParked bool, now time.Time) bool {
	return IsStreamLive(s, now) && s.Mode == Dense && s.Parked > 0 && !s.LeaseLive(now) && nextParked
}

// LeaseTally counts claims in flight per consumer as Leases reports them,
// for a store that finds each live claim itself rather than in SQL.
type LeaseTally map[string]*LeaseStats

// Add counts a claim of consumer last updated at updated whose lease ends
// at leaseEnd: expired once now has reached leaseEnd.
func (t LeaseTally) Add(consumer string, updated, leaseEnd, now time.Time) {
	l := t[consumer]
	if l == nil {
		l = &LeaseStats{Consumer: consumer}
		t[consumer] = l
	}
	l.Held++
	if !now.Before(leaseEnd) {
		l.Expired++
	}
	if l.OldestUpdatedAt.IsZero() || updated.Before(l.OldestUpdatedAt) {
		l.OldestUpdatedAt = updated
	}
}

// Sorted is the tally in consumer order.
func (t LeaseTally) Sorted() []LeaseStats {
	out := make([]LeaseStats, 0, len(t))
	for _, l := range t {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b LeaseStats) int { return strings.Compare(a.Consumer, b.Consumer) })
	return out
}
