package main

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// report prints a run's figures: the kills per crash point, the
// duplicates the relays and the broker made, and what dedupd did with
// them.
func report(t *testing.T, f *figures, crashDir string, took time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kills := markers(t, crashDir)
	sum, _ := total(kills)
	t.Logf("events %d, %d consumers per stage, lease %s, one event in %d crashing per point: settled in %s",
		events, consumersPerStage, lease, crashEvery, took.Round(time.Millisecond))
	t.Logf("SIGKILLs %d:", sum)
	for _, p := range CrashPoints {
		t.Logf("  %-26s %d", p, kills[p])
	}
	t.Logf("restarts after a kill: %v; orders reported placed %d", f.restarts, f.orders)
	for _, q := range slices.Sorted(maps.Keys(f.publishes)) {
		n, distinct := total(f.publishes[q])
		t.Logf("relay to %s: %d publishes of %d events: %d re-publishes (nacked by the broker: %d overall)",
			q, n, distinct, n-distinct, f.nacked)
	}
	for _, stage := range []string{shipping, ledger} {
		n, distinct := total(f.deliveries[stage])
		o := f.outcomes[stage]
		t.Logf("%s: %d deliveries of %d events (%d flagged redelivered by the broker, %d duplicates in all); "+
			"Do: %d effects run fresh, %d settled from a receipt, %d replayed, %d errors (requeued)",
			stage, n, distinct, f.redelivered[stage], n-distinct, o["completed"], o["settled"], o["replayed"], o["error"])
	}
}

// checkExercised fails a run that passed without testing what it claims:
// a crash point never hit, or no duplicate for dedupd to absorb.
func checkExercised(t *testing.T, f *figures, crashDir string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kills := markers(t, crashDir)
	for _, p := range CrashPoints {
		if kills[p] == 0 {
			t.Errorf("no kill at %s: the run did not test it", p)
		}
		if f.kills[p] != kills[p] {
			t.Errorf("%s: %d kills reported, %d recorded", p, f.kills[p], kills[p])
		}
	}
	republished := 0
	for _, pub := range f.publishes {
		n, distinct := total(pub)
		republished += n - distinct
	}
	if republished == 0 {
		t.Error("no relay re-published a row: the relays' duplicates were not tested")
	}
	for _, stage := range []string{shipping, ledger} {
		n, distinct := total(f.deliveries[stage])
		if n <= distinct {
			t.Errorf("%s got no duplicate delivery: dedupd absorbed nothing", stage)
		}
		if f.outcomes[stage]["settled"] == 0 {
			t.Errorf("%s: no takeover settled from a receipt", stage)
		}
		if f.outcomes[stage]["replayed"] == 0 {
			t.Errorf("%s: no duplicate was replayed", stage)
		}
	}
}
