package storetest_test

import (
	"context"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The models count claims in flight with store.LeaseTally, as Pebble does.

func (m *memStore) PendingLeases(ctx context.Context) ([]store.LeaseStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now, t := store.Now(time.Now()), store.LeaseTally{}
	for k, r := range m.records {
		if r.State == store.Pending && store.IsLive(&r, now) {
			t.Add(k[0], r.UpdatedAt, r.LeaseExpiresAt, now)
		}
	}
	return t.Sorted(), nil
}

func (m *memStreams) InFlightLeases(ctx context.Context) ([]store.LeaseStats, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now, t := store.Now(time.Now()), store.LeaseTally{}
	for k, st := range m.streams {
		if st.InFlight != 0 && store.IsStreamLive(&st, now) {
			t.Add(k[0], st.UpdatedAt, st.LeaseExpiresAt, now)
		}
	}
	return t.Sorted(), nil
}
