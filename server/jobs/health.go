package jobs

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
)

// failuresToGoDown is how many failures in a row, of writes or of pings,
// turn health NOT_SERVING. One missed ping is what a starved CPU or a
// stalled disk for a moment looks like; three in a row (6 s at the default
// --health-interval) is a store that does not answer. The way back is one
// success: a ping while pings were failing, a write (the watcher's own
// probe, if no caller writes) while writes were.
const failuresToGoDown = 3

// probeConsumer is the consumer of the watcher's probe write. It is not a
// valid consumer name (consumer.Pattern), so no call can name it, read it
// or collide with it; probeKey's record is made to expire at once.
const (
	probeConsumer = "_dedupd_health"
	probeKey      = "probe"
	probeLease    = time.Second
)

// HealthStore is what the health watcher pings, and writes its probe
// through.
type HealthStore interface {
	Ping(ctx context.Context) error
	Claim(ctx context.Context, p store.ClaimParams) (store.ClaimResult, error)
	DeleteRecord(ctx context.Context, consumer, key string) (store.Record, error)
}

// HealthStatus is where the watcher sets its verdict: grpc-go's
// health.Server.
type HealthStatus interface {
	SetServingStatus(service string, status healthpb.HealthCheckResponse_ServingStatus)
}

// HealthWatcher judges the store by the outcome of the writes callers make
// and of a ping every interval, and reports SERVING while both go through,
// NOT_SERVING while either fails (failuresToGoDown in a row). A ping gets
// one interval to answer, so a store that hangs counts as down. A write
// refused by the contract (LEASE_LOST, a conflict) is an answer: the store
// works. A write that ran out of its caller's deadline, or was cancelled,
// says nothing of the store and is not counted.
//
// Callers stop writing to a server that says NOT_SERVING, so while writes
// are judged failing the watcher writes itself, every interval: a claim of
// probeKey, which it then deletes. Its success brings health back.
type HealthWatcher struct {
	hs       HealthStatus
	names    []string // the health services set
	interval time.Duration
	policy   store.Policy
	m        *metrics.Metrics
	log      *slog.Logger

	// Written on every write call, so atomics, not the lock.
	writeFailures atomic.Int32
	writesDown    atomic.Bool

	mu           sync.Mutex
	pingFailures int  // only Check's goroutine touches it
	pingDown     bool // true until the first ping answers
	serving      bool
}

// NewHealthWatcher returns a watcher that sets the services names on hs,
// NOT_SERVING until the first ping answers. It pings every interval; its
// probe writes under probePolicy (the server's default policy).
func NewHealthWatcher(hs HealthStatus, names []string, interval time.Duration, probePolicy store.Policy, m *metrics.Metrics, log *slog.Logger) *HealthWatcher {
	setHealth(hs, names, false)
	return &HealthWatcher{hs: hs, names: names, interval: interval, policy: probePolicy, m: m, log: log, pingDown: true}
}

// writeOps are the store operations (metrics' op labels) whose outcome is
// a write's, of keys and of streams.
var writeOps = map[string]bool{
	"claim": true, "complete": true, "reject": true, "extend_lease": true, "delete_expired": true,
	"claim_stream": true, "complete_stream": true, "reject_stream": true, "release_stream": true,
	"extend_stream_lease": true, "delete_expired_streams": true,
}

// Observe is told of every store operation's outcome (metrics.ObserveStoreOutcomes).
func (w *HealthWatcher) Observe(op string, err error) {
	if !writeOps[op] {
		return
	}
	class, failed := store.Classify(err)
	switch {
	case !failed:
		if w.writeFailures.Load() != 0 {
			w.writeFailures.Store(0)
		}
	case class == store.FailureUnavailable || class == store.FailureInternal:
		if w.writeFailures.Add(1) >= failuresToGoDown && !w.writesDown.Load() {
			w.writesDown.Store(true)
			w.update(err)
		}
	}
}

// Check pings st once, and probes with a write while writes are judged
// failing, then updates the status if it changed.
func (w *HealthWatcher) Check(ctx context.Context, st HealthStore) {
	pingCtx, cancel := context.WithTimeout(ctx, w.interval)
	err := st.Ping(pingCtx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	w.mu.Lock()
	if err == nil {
		w.pingFailures, w.pingDown = 0, false
	} else if w.pingFailures++; w.pingFailures >= failuresToGoDown {
		w.pingDown = true
	}
	w.mu.Unlock()
	if w.writesDown.Load() && w.probe(ctx, st) {
		w.writeFailures.Store(0)
		w.writesDown.Store(false)
	}
	w.update(err)
}

// Run checks st every interval until ctx ends.
func (w *HealthWatcher) Run(ctx context.Context, st HealthStore) {
	every(ctx, w.interval, func(ctx context.Context) { w.Check(ctx, st) })
}

// probe writes once and reports whether the write went through: a claim of
// probeKey, then its deletion, so that nothing is left but an expired row
// for the reaper. A claim refused because an earlier probe's lease is
// still held proves nothing; the next probe, a lease later, acquires.
func (w *HealthWatcher) probe(ctx context.Context, st HealthStore) bool {
	probeCtx, cancel := context.WithTimeout(ctx, w.interval)
	defer cancel()
	res, err := st.Claim(probeCtx, store.ClaimParams{Consumer: probeConsumer, Key: probeKey, LeaseTTL: probeLease, Policy: w.policy})
	if err != nil || res.Outcome != store.Acquired {
		return false
	}
	_, _ = st.DeleteRecord(probeCtx, probeConsumer, probeKey) // else the lease runs out
	return true
}

// update sets the status the judgements give, if it changed; cause is the
// last failure seen, for the log.
func (w *HealthWatcher) update(cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	writesDown := w.writesDown.Load()
	now := !w.pingDown && !writesDown
	w.m.Serving(now)
	if now == w.serving {
		return
	}
	w.serving = now
	setHealth(w.hs, w.names, now)
	switch {
	case now:
		w.log.Info("store answers and takes writes; health SERVING")
	case writesDown:
		w.log.Warn("store refuses writes; health NOT_SERVING", "err", cause)
	default:
		w.log.Warn("store does not answer; health NOT_SERVING", "err", cause)
	}
}

// setHealth sets every health service named to SERVING or NOT_SERVING.
func setHealth(hs HealthStatus, names []string, serving bool) {
	status := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		status = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range names {
		hs.SetServingStatus(name, status)
	}
}
