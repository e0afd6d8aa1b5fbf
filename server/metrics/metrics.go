// Package metrics is dedupd's Prometheus instrumentation: the standard gRPC
// server metrics (as go-grpc-middleware's providers/prometheus names them)
// plus a few domain metrics, all on a registry of their own so nothing
// global leaks in. The series a call touches are looked up once per method
// and per consumer, not on every call.
//
// Cardinality is kept low on purpose: the only unbounded input, the
// consumer name, is a label value for at most MaxConsumerLabels distinct
// consumers (the first ones seen to reach a handler); later consumers share
// the value OtherConsumers. Keys, digests and tokens are never labels.
package metrics

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/rpcmethod"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// MaxConsumerLabels bounds the distinct values of every consumer label.
const MaxConsumerLabels = 100

// OtherConsumers is the consumer label of every consumer past the first
// MaxConsumerLabels.
const OtherConsumers = "_other"

// Metrics holds every collector dedupd exports.
type Metrics struct {
	Registry *prometheus.Registry
	// GRPC is the standard grpc_server_* set, with a handling-time histogram.
	GRPC *GRPCMetrics
	// Commits are the stores' group-commit metrics; a store records into
	// Commits.For(its name, ...).
	Commits *commitmetrics.Set

	claims          *prometheus.CounterVec
	streamClaims    *prometheus.CounterVec
	streamRefusals  *prometheus.CounterVec
	reacquired      *prometheus.CounterVec
	digestConflicts *prometheus.CounterVec
	leasesLost      *prometheus.CounterVec
	refused         *prometheus.CounterVec
	panics          prometheus.Counter
	reaperDeleted   prometheus.Counter
	reaperPasses    *prometheus.CounterVec
	reaperLastOK    prometheus.Gauge
	storeRetries    *prometheus.CounterVec
	storeErrors     *prometheus.CounterVec
	serving         prometheus.Gauge
	batchItems      *prometheus.HistogramVec
	connRefused     prometheus.Counter
	leases          *leaseCollector
	park            parkMetrics

	mu        sync.Mutex
	consumers sync.Map // name -> *consumerSeries, for the labelled consumers
	labelled  int      // how many consumers have a label of their own
	other     *consumerSeries
}

// New creates and registers every collector.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		GRPC:     newGRPCMetrics(),
		Commits:  commitmetrics.New(),
	}
	counterVec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m.claims = counterVec("dedupd_claims_total", "Claims answered, by consumer and outcome (acquired, in_progress, completed, rejected).", "consumer", "outcome")
	m.streamClaims = counterVec("dedupd_stream_claims_total", "Stream claims answered, by consumer and outcome (acquired, in_progress, duplicate, parked); refusals such as SEQUENCE_GAP are counted by dedupd_stream_refusals_total.", "consumer", "outcome")
	m.streamRefusals = counterVec("dedupd_stream_refusals_total", "Stream claims refused, by consumer and reason (SEQUENCE_GAP, STREAM_MODE_MISMATCH, PARK_FULL).", "consumer", "reason")
	m.reacquired = counterVec("dedupd_claims_reacquired_total", "Claims that acquired a key claimed before: a lease that ran out (takeover) or a retryable release.", "consumer")
	m.digestConflicts = counterVec("dedupd_digest_conflicts_total", "Claims refused because the key is stored with another digest.", "consumer")
	m.leasesLost = counterVec("dedupd_leases_lost_total", "Complete, Reject or ExtendLease refused because the caller's lease is no longer the key's current one.", "consumer", "method")
	m.refused = counterVec("dedupd_refused_calls_total", "Calls refused before a handler ran, and batch items refused for their rate, by reason (UNAUTHENTICATED, PERMISSION_DENIED, RATE_LIMITED, OVERLOADED).", "reason")
	m.panics = prometheus.NewCounter(prometheus.CounterOpts{Name: "dedupd_panics_total", Help: "Handler panics turned into INTERNAL."})
	m.reaperDeleted = prometheus.NewCounter(prometheus.CounterOpts{Name: "dedupd_reaper_deleted_total", Help: "Expired records deleted by the reaper."})
	m.reaperPasses = counterVec("dedupd_reaper_passes_total", "Reaper passes, by result (ok, error).", "result")
	m.reaperLastOK = prometheus.NewGauge(prometheus.GaugeOpts{Name: "dedupd_reaper_last_success_timestamp_seconds", Help: "Unix time of the last reaper pass that finished without error; 0 before the first."})
	m.storeRetries = counterVec("dedupd_store_retries_total", "Store transactions run again after a serialization failure or lost compare-and-set (PostgreSQL/CockroachDB).", "op")
	m.storeErrors = counterVec("dedupd_store_errors_total", "Store operations that failed, by operation and class (unavailable, deadline, canceled, internal). Refusals such as LEASE_LOST are not errors.", "op", "class")
	m.serving = prometheus.NewGauge(prometheus.GaugeOpts{Name: "dedupd_serving", Help: "1 while the health status is SERVING (the store answers), else 0."})
	m.batchItems = newBatchItems()
	m.leases = newLeaseCollector(m)
	m.connRefused = prometheus.NewCounter(prometheus.CounterOpts{Name: "dedupd_connections_refused_total", Help: "Connections closed as soon as accepted because their address (IPv6: /64) held its share of --max-connections (--max-connections-per-peer)."})
	m.Registry.MustRegister(m.batchItems, m.GRPC, m.Commits, m.claims, m.streamClaims, m.streamRefusals, m.reacquired, m.digestConflicts, m.leasesLost, m.refused,
		m.panics, m.reaperDeleted, m.reaperPasses, m.reaperLastOK, m.storeRetries, m.storeErrors, m.serving, m.connRefused, m.leases,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.park = newParkMetrics()
	m.Registry.MustRegister(m.park.collectors()...)
	m.initializeSeries()
	return m
}

// storeOps are the op label values of the store metrics, classes the
// class values of dedupd_store_errors_total.
var (
	storeOps     = countedOps()
	errorClasses = []string{store.FailureUnavailable, store.FailureDeadline, store.FailureCanceled, store.FailureInternal}
)

// initializeSeries exports every series whose label values are known in
// advance at zero, before anything has happened: a series that appears
// only at its first increment hides that increment from rate() and
// increase(), so an alert on it would miss the first failure, and a
// dashboard or rule naming the family would see nothing at all.
//
// The consumer-labelled counters start at zero under OtherConsumers, so that
// every family a dashboard or an alert names exists on a fresh server, and
// under each consumer as it gets its label (zeroConsumer).
func (m *Metrics) initializeSeries() {
	m.other = &consumerSeries{label: OtherConsumers}
	m.zeroConsumer(OtherConsumers)
	for _, r := range []string{"ok", "error"} {
		m.reaperPasses.WithLabelValues(r)
	}
	for reason := range refusalReasons {
		m.refused.WithLabelValues(reason)
	}
	for _, op := range storeOps {
		m.storeRetries.WithLabelValues(op)
		for _, class := range errorClasses {
			m.storeErrors.WithLabelValues(op, class)
		}
	}
}

// consumerLabel returns the label value for a consumer: itself while fewer
// than MaxConsumerLabels are known, else OtherConsumers.
func (m *Metrics) consumerLabel(name string) string { return m.consumer(name).label }

// consumerSeries are the series a claim of one consumer touches, each
// looked up on its first use and kept: the claims by outcome, and the
// reacquired claims. (A series appears when first counted, as before.)
type consumerSeries struct {
	label      string
	claims     [dedupv1.Outcome_OUTCOME_REJECTED + 1]atomic.Pointer[prometheus.Counter] // by outcome
	reacquired atomic.Pointer[prometheus.Counter]
}

// claim returns the counter of claims with outcome o.
func (s *consumerSeries) claim(m *Metrics, o dedupv1.Outcome) prometheus.Counter {
	if int(o) < 0 || int(o) >= len(s.claims) {
		return m.claims.WithLabelValues(s.label, outcomeLabel(o))
	}
	if c := s.claims[o].Load(); c != nil {
		return *c
	}
	c := m.claims.WithLabelValues(s.label, outcomeLabel(o))
	s.claims[o].Store(&c)
	return c
}

// reacquiredCounter returns the counter of reacquired claims.
func (s *consumerSeries) reacquiredCounter(m *Metrics) prometheus.Counter {
	if c := s.reacquired.Load(); c != nil {
		return *c
	}
	c := m.reacquired.WithLabelValues(s.label)
	s.reacquired.Store(&c)
	return c
}

// outcomeLabel is an outcome's label value: "acquired", "in_progress"...
func outcomeLabel(o dedupv1.Outcome) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "OUTCOME_"))
}

// consumer returns a consumer's series. The first MaxConsumerLabels
// consumers get their own, kept in a map read without a lock; every later
// one shares OtherConsumers' (and takes the lock to learn it is late).
func (m *Metrics) consumer(name string) *consumerSeries {
	if s, ok := m.consumers.Load(name); ok {
		return s.(*consumerSeries)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.consumers.Load(name); ok {
		return s.(*consumerSeries)
	}
	if m.labelled >= MaxConsumerLabels {
		return m.other
	}
	s := &consumerSeries{label: name}
	m.zeroConsumer(name)
	m.consumers.Store(name, s)
	m.labelled++
	return s
}

// Label values of the consumer-labelled counters, besides the consumer.
var (
	claimOutcomes       = []string{"acquired", "in_progress", "completed", "rejected"}
	streamClaimOutcomes = []string{"acquired", "in_progress", "duplicate", "parked"}
	streamRefusals      = []string{rpcerrors.ReasonSequenceGap, rpcerrors.ReasonStreamModeMismatch, rpcerrors.ReasonParkFull}
	// leaseMethods are the operations of the calls that can lose a lease
	// (LEASE_LOST): the fenced methods of the method table.
	leaseMethods = fencedOps()
)

func fencedOps() []string {
	var ops []string
	for _, m := range rpcmethod.All() {
		if m.Fenced {
			ops = append(ops, m.Op)
		}
	}
	return ops
}

// zeroConsumer exports every series of a consumer label at zero, when the
// label is given out (see initializeSeries): once a consumer is seen, a
// digest conflict or a lost lease is a rise from 0 that rate() and alerts
// see, not a series that appears from nothing, and its panel shows 0
// rather than no data.
func (m *Metrics) zeroConsumer(label string) {
	for _, o := range claimOutcomes {
		m.claims.WithLabelValues(label, o)
	}
	for _, o := range streamClaimOutcomes {
		m.streamClaims.WithLabelValues(label, o)
	}
	for _, r := range streamRefusals {
		m.streamRefusals.WithLabelValues(label, r)
	}
	for _, method := range leaseMethods {
		m.leasesLost.WithLabelValues(label, method)
	}
	m.reacquired.WithLabelValues(label)
	m.digestConflicts.WithLabelValues(label)
}

// ExportEngine adds the engine's own metrics, when it reports any (the
// Pebble store does: compactions, WAL and table bytes, its key filter).
func (m *Metrics) ExportEngine(engine any) {
	if e, ok := engine.(interface{ Collector() prometheus.Collector }); ok {
		m.Registry.MustRegister(e.Collector())
	}
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// Panic counts a handler panic.
func (m *Metrics) Panic() { m.panics.Inc() }

// ConnectionRefused counts a connection closed for its address's share.
func (m *Metrics) ConnectionRefused() { m.connRefused.Inc() }

// Shed counts a call refused OVERLOADED as it arrived, before the
// interceptors that count the other refusals saw it.
func (m *Metrics) Shed() { m.refused.WithLabelValues(rpcerrors.ReasonOverloaded).Inc() }

// Serving records the health status.
func (m *Metrics) Serving(ok bool) {
	if ok {
		m.serving.Set(1)
	} else {
		m.serving.Set(0)
	}
}

// StoreRetry counts one retried store transaction. The store names its
// operations in words ("extend lease"); the label spells them as
// dedupd_store_errors_total does ("extend_lease"), so the two join on op.
func (m *Metrics) StoreRetry(op string) {
	m.storeRetries.WithLabelValues(strings.ReplaceAll(op, " ", "_")).Inc()
}

// ReaperPass records one reaper pass.
func (m *Metrics) ReaperPass(deleted int, err error, unixNow float64) {
	m.reaperDeleted.Add(float64(deleted))
	if err != nil {
		m.reaperPasses.WithLabelValues("error").Inc()
		return
	}
	m.reaperPasses.WithLabelValues("ok").Inc()
	m.reaperLastOK.Set(unixNow)
}
