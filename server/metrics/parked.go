package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupd/dedupd/server/store"
)

// parkMetrics are park mode's series: what is parked per consumer, how
// long the oldest event and the oldest open gap have waited (the reaper
// sets them each pass), and the gap timeouts and skips (counted as they
// happen, from 0).
type parkMetrics struct {
	events, bytes, oldestAge, oldestGap *prometheus.GaugeVec
	gapTimeouts, skips, skipped         *prometheus.CounterVec
}

// gapActions and skipCauses are the label values of the counters, at 0
// from the start.
var (
	gapActions = []string{"hold", "skip"}
	skipCauses = map[store.SkipCause]string{store.SkipByGapTimeout: "gap_timeout", store.SkipByAdmin: "admin"}
)

func newParkMetrics() parkMetrics {
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, []string{"consumer"})
	}
	counter := func(name, help, label string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{label})
	}
	p := parkMetrics{
		events:    gauge("dedupd_stream_parked_events", "Events parked in live streams, by consumer, as of the last reaper pass."),
		bytes:     gauge("dedupd_stream_parked_bytes", "Payload bytes of the parked events, by consumer, as of the last reaper pass."),
		oldestAge: gauge("dedupd_stream_oldest_parked_seconds", "Age of the consumer's oldest parked event at the last reaper pass."),
		oldestGap: gauge("dedupd_stream_oldest_open_gap_seconds", "How long the consumer's oldest parked event has waited on a missing sequence (an open gap), at the last reaper pass; 0 when no gap is open."),
		gapTimeouts: counter("dedupd_stream_gap_timeouts_total",
			"Open gaps found past their stream policy's gap_timeout, by the action taken (hold: counted once per gap and process; skip).", "action"),
		skips:   counter("dedupd_stream_skips_total", "Gaps skipped, by cause (gap_timeout, admin).", "cause"),
		skipped: counter("dedupd_stream_skipped_sequences_total", "Sequences given up by gap skips, by cause (gap_timeout, admin).", "cause"),
	}
	for _, g := range []*prometheus.GaugeVec{p.events, p.bytes, p.oldestAge, p.oldestGap} {
		setAll(g, nil)
	}
	for _, a := range gapActions {
		p.gapTimeouts.WithLabelValues(a)
	}
	for _, c := range skipCauses {
		p.skips.WithLabelValues(c)
		p.skipped.WithLabelValues(c)
	}
	return p
}

func (p parkMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{p.events, p.bytes, p.oldestAge, p.oldestGap, p.gapTimeouts, p.skips, p.skipped}
}

// ParkedTotals sets the per-consumer parked gauges from one read of every
// consumer's totals at now. Consumers past MaxConsumerLabels add up under
// OtherConsumers.
func (m *Metrics) ParkedTotals(totals []store.ConsumerParked, now time.Time) {
	events, bytes, oldest := map[string]float64{}, map[string]float64{}, map[string]float64{}
	for _, c := range totals {
		l := m.consumerLabel(c.Consumer)
		events[l] += float64(c.Events)
		bytes[l] += float64(c.Bytes)
		oldest[l] = max(oldest[l], now.Sub(c.OldestParkedAt).Seconds())
	}
	setAll(m.park.events, events)
	setAll(m.park.bytes, bytes)
	setAll(m.park.oldestAge, oldest)
}

// OpenGaps sets the oldest open gap's age per consumer from every open gap
// found at now.
func (m *Metrics) OpenGaps(gaps []store.OpenGap, now time.Time) {
	oldest := map[string]float64{}
	for _, g := range gaps {
		l := m.consumerLabel(g.Consumer)
		oldest[l] = max(oldest[l], now.Sub(g.OldestParkedAt).Seconds())
	}
	setAll(m.park.oldestGap, oldest)
}

// GapTimedOut counts a gap found past its timeout, by the action taken:
// "hold" or "skip".
func (m *Metrics) GapTimedOut(action string) { m.park.gapTimeouts.WithLabelValues(action).Inc() }

// skippedGap counts a gap skip that wrote.
func (m *Metrics) skippedGap(r store.SkippedRange) {
	cause := skipCauses[r.Cause]
	m.park.skips.WithLabelValues(cause).Inc()
	m.park.skipped.WithLabelValues(cause).Add(float64(r.To - r.From + 1))
}

// setAll replaces every series of g with values; a consumer with nothing
// parked any more drops out. The OtherConsumers series stays, at 0 when it
// has nothing, so that the family exists (for rules and dashboards) from
// the start.
func setAll(g *prometheus.GaugeVec, values map[string]float64) {
	g.Reset()
	g.WithLabelValues(OtherConsumers)
	for l, v := range values {
		g.WithLabelValues(l).Set(v)
	}
}
