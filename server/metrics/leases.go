package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupd/dedupd/server/store"
)

// The kind label of the lease gauges: claims of keys, and streams' claims.
const (
	LeaseKindKey    = "key"
	LeaseKindStream = "stream"
)

var (
	leasesHeldDesc = prometheus.NewDesc("dedupd_claims_in_flight",
		"Claims in flight at the last sample (PENDING records; streams with a claim in flight), by consumer and kind (key, stream), their lease live or not.",
		[]string{"consumer", "kind"}, nil)
	leasesExpiredDesc = prometheus.NewDesc("dedupd_claims_lease_expired",
		"Claims in flight whose lease had run out at the last sample: the reconciliation queue, by consumer and kind.",
		[]string{"consumer", "kind"}, nil)
	oldestIdleDesc = prometheus.NewDesc("dedupd_oldest_claim_idle_seconds",
		"Seconds since the last claim or lease extension of the claim in flight left alone longest, by consumer and kind; 0 with none in flight. A heartbeating holder stays low, an abandoned claim grows.",
		[]string{"consumer", "kind"}, nil)
	sampledDesc = prometheus.NewDesc("dedupd_lease_sample_timestamp_seconds",
		"Unix time of the last successful sample of the claims in flight (--lease-sample-interval), by kind; 0 before the first.",
		[]string{"kind"}, nil)
)

// leaseCollector exports the last sample of the claims in flight. The
// sample is taken by the server every --lease-sample-interval (the store
// reads only its index of claims in flight); the ages are computed at
// scrape time from it, so they keep growing between samples.
type leaseCollector struct {
	m  *Metrics
	mu sync.Mutex
	// by kind, then consumer label: consumers past MaxConsumerLabels are
	// summed under OtherConsumers, their oldest claim the oldest of all.
	sample  map[string]map[string]store.LeaseStats
	sampled map[string]time.Time
}

func newLeaseCollector(m *Metrics) *leaseCollector {
	return &leaseCollector{m: m, sample: map[string]map[string]store.LeaseStats{}, sampled: map[string]time.Time{}}
}

// ObserveLeases records a successful sample of one kind of claims.
func (m *Metrics) ObserveLeases(kind string, stats []store.LeaseStats, at time.Time) {
	byLabel := map[string]store.LeaseStats{}
	for _, s := range stats {
		label := m.consumerLabel(s.Consumer)
		sum := byLabel[label]
		sum.Held += s.Held
		sum.Expired += s.Expired
		if sum.OldestUpdatedAt.IsZero() || (!s.OldestUpdatedAt.IsZero() && s.OldestUpdatedAt.Before(sum.OldestUpdatedAt)) {
			sum.OldestUpdatedAt = s.OldestUpdatedAt
		}
		byLabel[label] = sum
	}
	c := m.leases
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sample[kind], c.sampled[kind] = byLabel, at
}

func (c *leaseCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{leasesHeldDesc, leasesExpiredDesc, oldestIdleDesc, sampledDesc} {
		ch <- d
	}
}

func (c *leaseCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, kind := range []string{LeaseKindKey, LeaseKindStream} {
		var at float64
		if t := c.sampled[kind]; !t.IsZero() {
			at = float64(t.UnixNano()) / 1e9
		}
		ch <- prometheus.MustNewConstMetric(sampledDesc, prometheus.GaugeValue, at, kind)
		emit := func(label string, s store.LeaseStats) {
			idle := 0.0
			if !s.OldestUpdatedAt.IsZero() {
				idle = max(0, now.Sub(s.OldestUpdatedAt).Seconds())
			}
			ch <- prometheus.MustNewConstMetric(leasesHeldDesc, prometheus.GaugeValue, float64(s.Held), label, kind)
			ch <- prometheus.MustNewConstMetric(leasesExpiredDesc, prometheus.GaugeValue, float64(s.Expired), label, kind)
			ch <- prometheus.MustNewConstMetric(oldestIdleDesc, prometheus.GaugeValue, idle, label, kind)
		}
		for label, s := range c.sample[kind] {
			emit(label, s)
		}
		if _, ok := c.sample[kind][OtherConsumers]; !ok {
			emit(OtherConsumers, store.LeaseStats{}) // every family exists on a fresh server
		}
	}
}
