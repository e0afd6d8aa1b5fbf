package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dedupd/dedupd/server/store"
)

// TestLeaseGauges: a fresh server exports every lease family at zero; a
// sample is exported per consumer and kind, consumers past the label cap
// summed under OtherConsumers with the oldest claim of them all.
func TestLeaseGauges(t *testing.T) {
	m := New()
	fresh := `
# HELP dedupd_claims_in_flight Claims in flight at the last sample (PENDING records; streams with a claim in flight), by consumer and kind (key, stream), their lease live or not.
# TYPE dedupd_claims_in_flight gauge
dedupd_claims_in_flight{consumer="_other",kind="key"} 0
dedupd_claims_in_flight{consumer="_other",kind="stream"} 0
`
	if err := testutil.CollectAndCompare(m.leases, strings.NewReader(fresh), "dedupd_claims_in_flight"); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var stats []store.LeaseStats
	for i := range MaxConsumerLabels + 2 {
		stats = append(stats, store.LeaseStats{Consumer: fmt.Sprintf("c%03d", i), Held: 2, Expired: 1,
			OldestUpdatedAt: now.Add(-time.Duration(i) * time.Minute)})
	}
	m.ObserveLeases(LeaseKindKey, stats, now)
	m.ObserveLeases(LeaseKindStream, []store.LeaseStats{{Consumer: "c000", Held: 1, OldestUpdatedAt: now}}, now)
	n := testutil.CollectAndCount(m.leases, "dedupd_claims_in_flight")
	if want := MaxConsumerLabels + 1 + 2; n != want { // keys: 100 labels and _other; streams: c000 and _other
		t.Fatalf("%d dedupd_claims_in_flight series, want %d", n, want)
	}
	got := gather(t, m)
	for _, w := range []struct {
		family, consumer, kind string
		want                   float64
	}{
		{"dedupd_claims_in_flight", "c000", "key", 2},
		{"dedupd_claims_lease_expired", "c000", "key", 1},
		{"dedupd_claims_in_flight", OtherConsumers, "key", 4}, // the two past the cap
		{"dedupd_claims_lease_expired", OtherConsumers, "key", 2},
		{"dedupd_claims_in_flight", "c000", "stream", 1},
		{"dedupd_claims_in_flight", OtherConsumers, "stream", 0},
	} {
		if v := got[w.family+"/"+w.consumer+"/"+w.kind]; v != w.want {
			t.Errorf("%s{consumer=%q,kind=%q} = %v, want %v", w.family, w.consumer, w.kind, v, w.want)
		}
	}
	// The last consumer past the cap (c101) was left alone 101 minutes.
	if idle := got["dedupd_oldest_claim_idle_seconds/"+OtherConsumers+"/key"]; idle < 101*60 || idle > 102*60 {
		t.Errorf("%s oldest idle = %vs, want 101 minutes", OtherConsumers, idle)
	}
}

// gather returns every lease gauge as family/consumer/kind -> value.
func gather(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if g := metric.GetGauge(); g != nil {
				out[f.GetName()+"/"+labels["consumer"]+"/"+labels["kind"]] = g.GetValue()
			}
		}
	}
	return out
}
