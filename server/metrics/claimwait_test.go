package metrics

import "testing"

// The waiting-claim series read the registry's counts when scraped.
func TestExportClaimWaits(t *testing.T) {
	m := New()
	waiting, refused := 3, int64(7)
	m.ExportClaimWaits(func() int { return waiting }, func() int64 { return refused })
	for _, tt := range []struct {
		name string
		want float64
	}{{"dedupd_claim_waiters", 3}, {"dedupd_claim_waits_refused_total", 7}} {
		if got := valueOf(t, m, tt.name); got != tt.want {
			t.Errorf("%s = %v, want %v", tt.name, got, tt.want)
		}
	}
	waiting = 0
	if got := valueOf(t, m, "dedupd_claim_waiters"); got != 0 {
		t.Errorf("dedupd_claim_waiters = %v after the waiters left, want 0", got)
	}
}

// valueOf is the value of the one series of the gauge or counter name.
func valueOf(t *testing.T, m *Metrics, name string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name && len(f.GetMetric()) == 1 {
			s := f.GetMetric()[0]
			return s.GetGauge().GetValue() + s.GetCounter().GetValue()
		}
	}
	t.Fatalf("%s is not exported as one series", name)
	return 0
}
