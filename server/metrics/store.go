package metrics

import (
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

// StoreCounters is what the store observer (storetrace.Observe) counts
// here: the failures of the store's counted operations (store.Op.Counted:
// the hot path's calls, of keys and of streams, and the reaper's) by op
// label and class in dedupd_store_errors_total, and the gaps SkipGap gave
// up. Refusals the contract defines are answers, not failures. onOutcome,
// when not nil, is also told of every counted operation's outcome (each
// batch item's included), as the op label and the error (nil for a
// success): the health watcher judges the store by its real writes. It
// runs on the caller's goroutine, on every call, so it must be cheap.
func (m *Metrics) StoreCounters(onOutcome func(op string, err error)) storetrace.Options {
	return storetrace.Options{
		Counted: func(op store.Op, class string, failed bool, err error) {
			if failed {
				m.storeErrors.WithLabelValues(op.Label, class).Inc()
			}
			if onOutcome != nil {
				onOutcome(op.Label, err)
			}
		},
		StreamApplied: func(cmd store.StreamCommand, d *store.StreamDecision) {
			if p, ok := cmd.(store.SkipGapParams); ok && !p.DryRun && d.Skipped != nil {
				m.skippedGap(*d.Skipped)
			}
		},
	}
}

// ObserveStore wraps e in the store observer counting here (and tracing
// nothing), as the typed API.
func (m *Metrics) ObserveStore(e store.Engine) store.Backend {
	return store.NewAPI(storetrace.Observe(e, m.StoreCounters(nil)))
}

// countedOps are the op labels of the store's counted operations.
func countedOps() []string {
	var ops []string
	for _, op := range store.Ops() {
		if op.Counted {
			ops = append(ops, op.Label)
		}
	}
	return ops
}
