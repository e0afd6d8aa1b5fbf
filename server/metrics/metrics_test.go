package metrics

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// TestConsumerLabelIsCapped: past MaxConsumerLabels distinct consumers,
// new ones share one label value, so a caller cannot grow the series count.
func TestConsumerLabelIsCapped(t *testing.T) {
	m := New()
	for i := range MaxConsumerLabels + 50 {
		m.claims.WithLabelValues(m.consumerLabel(fmt.Sprintf("c%d", i)), "acquired").Inc()
	}
	// Each label value has a series per outcome (4), at zero until counted.
	if n := testutil.CollectAndCount(m.claims); n != (MaxConsumerLabels+1)*4 {
		t.Fatalf("%d series, want 4 outcomes of %d consumers plus %q", n, MaxConsumerLabels, OtherConsumers)
	}
	if got := testutil.ToFloat64(m.claims.WithLabelValues(OtherConsumers, "acquired")); got != 50 {
		t.Fatalf("%s = %v, want the 50 consumers past the cap", OtherConsumers, got)
	}
	if m.consumerLabel("c0") != "c0" {
		t.Fatal("a consumer seen before the cap lost its label")
	}
}

// TestConsumerSeriesStartAtZero: before any call every consumer-labelled
// family exists (under OtherConsumers), and a consumer seen once has its
// conflict and lost-lease series at 0, so their first rise is visible.
func TestConsumerSeriesStartAtZero(t *testing.T) {
	m := New()
	for name, c := range map[string]prometheus.Collector{
		"claims": m.claims, "streamClaims": m.streamClaims, "streamRefusals": m.streamRefusals,
		"reacquired": m.reacquired, "digestConflicts": m.digestConflicts, "leasesLost": m.leasesLost,
	} {
		if n := testutil.CollectAndCount(c); n == 0 {
			t.Errorf("%s has no series on a fresh registry", name)
		}
	}
	m.claims.WithLabelValues(m.consumerLabel("payments"), "acquired").Inc()
	for _, c := range []prometheus.Counter{m.digestConflicts.WithLabelValues("payments"),
		m.leasesLost.WithLabelValues("payments", "Complete"), m.streamRefusals.WithLabelValues("payments", "SEQUENCE_GAP")} {
		if got := testutil.ToFloat64(c); got != 0 {
			t.Errorf("%v = %v, want 0", c.Desc(), got)
		}
	}
	// 2 labels (payments, _other) x 9 methods, all exported before any loss.
	if n := testutil.CollectAndCount(m.leasesLost); n != 2*9 {
		t.Errorf("dedupd_leases_lost_total has %d series, want 18", n)
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
		s := m.ObserveStore(storetest.AsEngine(failingStore{err: tc.err}))
		_, _ = s.Lookup(context.Background(), "c", "k")
		total := sumOf(t, m, "dedupd_store_errors_total")
		if tc.class == "" && total != 0 || tc.class != "" && (total != 1 || testutil.ToFloat64(m.storeErrors.WithLabelValues("lookup", tc.class)) != 1) {
			t.Errorf("%v: %v errors counted; want class %q counted once", tc.err, total, tc.class)
		}
	}
}

type failingStore struct {
	store.Backend
	err error
}

func (f failingStore) Lookup(context.Context, string, string) (store.Record, error) {
	return store.Record{}, f.err
}

// TestKnownSeriesStartAtZero: the series whose labels are known in advance
// are exported before anything happens, at zero, so that rate() sees
// their first increment; the retry counter's op joins the error counter's.
func TestKnownSeriesStartAtZero(t *testing.T) {
	m := New()
	want := map[string]int{
		"dedupd_refused_calls_total": 4,      // UNAUTHENTICATED, PERMISSION_DENIED, RATE_LIMITED, OVERLOADED
		"dedupd_store_errors_total":  21 * 4, // ops (7 of keys, 7 of streams, 7 of park mode) x classes
		"dedupd_store_retries_total": 21,     // ops
		"dedupd_reaper_passes_total": 2,      // ok, error
		// Park mode's counters: hold, skip; gap_timeout, admin.
		"dedupd_stream_gap_timeouts_total":      2,
		"dedupd_stream_skips_total":             2,
		"dedupd_stream_skipped_sequences_total": 2,
	}
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		n, ok := want[f.GetName()]
		if !ok {
			continue
		}
		delete(want, f.GetName())
		if len(f.GetMetric()) != n {
			t.Errorf("%s: %d series at start, want %d", f.GetName(), len(f.GetMetric()), n)
		}
		if sum := sumOf(t, m, f.GetName()); sum != 0 {
			t.Errorf("%s = %v at start, want 0", f.GetName(), sum)
		}
	}
	for name := range want {
		t.Errorf("%s is not exported at start", name)
	}

	m.StoreRetry("extend lease")
	if got := testutil.ToFloat64(m.storeRetries.WithLabelValues("extend_lease")); got != 1 {
		t.Errorf(`retry of "extend lease" counted under op="extend_lease" %v times, want 1`, got)
	}
}

// sumOf adds up every series of the counter family name.
func sumOf(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() == name {
			for _, s := range f.GetMetric() {
				total += s.GetCounter().GetValue()
			}
		}
	}
	return total
}

// The op labels come from store.Ops; they must stay the ones dashboards and
// alerts name.
func TestStoreOpLabelsAreUnchanged(t *testing.T) {
	want := []string{
		"claim", "complete", "reject", "extend_lease", "lookup", "delete_expired", "ping",
		"claim_stream", "complete_stream", "reject_stream", "release_stream", "extend_stream_lease",
		"get_stream", "delete_expired_streams",
		"claim_parked", "list_parked", "get_parked_summary", "list_open_gaps", "parked_totals", "drop_parked", "skip_gap",
	}
	got := slices.Sorted(slices.Values(storeOps))
	if slices.Sort(want); !slices.Equal(got, want) {
		t.Errorf("store op labels %v, want %v", got, want)
	}
}
