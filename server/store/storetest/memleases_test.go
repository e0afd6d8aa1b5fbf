package storetest_test

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// leaseTally sums up claims in flight per consumer, for the models.
type leaseTally map[string]*store.LeaseStats

func (t leaseTally) add(consumer string, updated, leaseEnd, now time.Time) {
	l := t[consumer]
	if l == nil {
		l = &store.LeaseStats{Consumer: consumer}
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

func (t leaseTally) sorted() []store.LeaseStats {
	out := make([]store.LeaseStats, 0, len(t))
	for _, l := range t {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b store.LeaseStats) int { return strings.Compare(a.Consumer, b.Consumer) })
	return out
}

func (m *memStore) PendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now, t := store.Now(time.Now()), leaseTally{}
	for k, r := range m.records {
		if r.State == store.Pending && store.IsLive(&r, now) {
			t.add(k[0], r.UpdatedAt, r.LeaseExpiresAt, now)
		}
	}
	return t.sorted(), nil
}

func (m *memStreams) InFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now, t := store.Now(time.Now()), leaseTally{}
	for k, st := range m.streams {
		if st.InFlight != 0 && store.IsStreamLive(&st, now) {
			t.add(k[0], st.UpdatedAt, st.LeaseExpiresAt, now)
		}
	}
	return t.sorted(), nil
}
