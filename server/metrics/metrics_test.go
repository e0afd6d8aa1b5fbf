package metrics

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dedupd/dedupd/server/store"
)

// TestConsumerLabelIsCapped: past MaxConsumerLabels distinct consumers,
// new ones share one label value, so a caller cannot grow the series count.
func TestConsumerLabelIsCapped(t *testing.T) {
	m := New()
	for i := range MaxConsumerLabels + 50 {
		m.claims.WithLabelValues(m.consumerLabel(fmt.Sprintf("c%d", i)), "acquired").Inc()
	}
	if n := testutil.CollectAndCount(m.claims); n != MaxConsumerLabels+1 {
		t.Fatalf("%d series, want %d consumers plus %q", n, MaxConsumerLabels, OtherConsumers)
	}
	if got := testutil.ToFloat64(m.claims.WithLabelValues(OtherConsumers, "acquired")); got != 50 {
		t.Fatalf("%s = %v, want the 50 consumers past the cap", OtherConsumers, got)
	}
	if m.consumerLabel("c0") != "c0" {
		t.Fatal("a consumer seen before the cap lost its label")
	}
}

// TestObservedStoreCountsFailuresNotRefusals: errors are counted by class;
// the refusals of the store contract are answers, not failures.
func TestObservedStoreCountsFailuresNotRefusals(t *testing.T) {
	cases := []struct {
		err   error
		class string
	}{
		{nil, ""},
		{store.ErrNotFound, ""},
		{&store.ConflictError{Err: store.ErrLeaseLost}, ""},
		{store.ErrDigestMismatch, ""},
		{fmt.Errorf("dial: %w", store.ErrUnavailable), "unavailable"},
		{context.DeadlineExceeded, "deadline"},
		{context.Canceled, "canceled"},
		{errors.New("bug"), "internal"},
	}
	for _, tc := range cases {
		m := New()
		s := m.ObserveStore(failingStore{err: tc.err})
		_, _ = s.Lookup(context.Background(), "c", "k")
		got := testutil.CollectAndCount(m.storeErrors)
		if tc.class == "" && got != 0 || tc.class != "" && testutil.ToFloat64(m.storeErrors.WithLabelValues("lookup", tc.class)) != 1 {
			t.Errorf("%v: %d series; want class %q counted once", tc.err, got, tc.class)
		}
	}
}

type failingStore struct {
	store.Store
	err error
}

func (f failingStore) Lookup(context.Context, string, string) (store.Record, error) {
	return store.Record{}, f.err
}
