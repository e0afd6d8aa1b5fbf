package metrics

import "github.com/prometheus/client_golang/prometheus"

// ExportClaimWaits exports the claims that wait for an in-flight outcome
// (server/claimwait), read when scraped: dedupd_claim_waiters, the keys
// and streams waited on now, and dedupd_claim_waits_refused_total, the
// claims answered at once because a waiter bound was reached (a steady
// rate means the bounds are too low for the load, or a hot key).
func (m *Metrics) ExportClaimWaits(waiting func() int, refused func() int64) {
	m.Registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "dedupd_claim_waiters",
			Help: "Keys and streams that claims are waiting on, for their holder's outcome."},
			func() float64 { return float64(waiting()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "dedupd_claim_waits_refused_total",
			Help: "Claims that asked to wait and were answered at once because a waiter bound was reached."},
			func() float64 { return float64(refused()) }),
	)
}
