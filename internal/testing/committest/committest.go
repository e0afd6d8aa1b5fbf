// Package committest reads the group-commit metrics (server/store/commitmetrics)
// of one store back in tests, from the collectors themselves, so that a
// test can check them against the writes it made.
package committest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
)

// Totals are one store's series: per kind, the commands its commits
// carried (the histogram's sum) and the commits carrying that kind (its
// count); the commits and fsyncs counted.
type Totals struct {
	Commands, CommitsOfKind map[string]float64
	Commits, Fsyncs         float64
}

// Read gathers set and returns the series labelled store.
func Read(t testing.TB, set *commitmetrics.Set, store string) Totals {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(set)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := Totals{Commands: map[string]float64{}, CommitsOfKind: map[string]float64{}}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["store"] != store {
				continue
			}
			switch f.GetName() {
			case commitmetrics.CommandsName:
				got.Commands[labels["kind"]] = m.GetHistogram().GetSampleSum()
				got.CommitsOfKind[labels["kind"]] = float64(m.GetHistogram().GetSampleCount())
			case commitmetrics.CommitsName:
				got.Commits = m.GetCounter().GetValue()
			case commitmetrics.FsyncsName:
				got.Fsyncs = m.GetCounter().GetValue()
			}
		}
	}
	return got
}

// Cycles has n callers at once each claim a key of its own and complete
// it, then one more complete each with a stale token, which the contract
// refuses and which must not count as a write. It returns once all have
// answered.
func Cycles(t testing.TB, s store.Backend, n int, policy store.Policy) {
	t.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("key-%d", i)
			res, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: key, Policy: policy})
			if err != nil || res.Outcome != store.Acquired {
				t.Errorf("claim %s: %v, %v", key, res.Outcome, err)
				return
			}
			done := store.CompleteParams{Consumer: "c", Key: key, FencingToken: res.Record.FencingToken, Result: []byte("r"), Policy: policy}
			if _, err := s.Complete(ctx, done); err != nil {
				t.Errorf("complete %s: %v", key, err)
			}
			done.FencingToken++
			if _, err := s.Complete(ctx, done); err == nil {
				t.Errorf("complete %s with a stale token was accepted", key)
			}
		})
	}
	wg.Wait()
}

// CheckCycles checks got after Cycles(n): n claims and n finishes carried,
// nothing else, in at least one commit and at most one per write.
func CheckCycles(t testing.TB, got Totals, n int) {
	t.Helper()
	want := map[string]float64{"claim": float64(n), "finish": float64(n)}
	for kind, carried := range got.Commands {
		if carried != want[kind] {
			t.Errorf("commits carried %v %s commands; want %v", carried, kind, want[kind])
		}
	}
	if got.Commits < 1 || got.Commits > float64(2*n) {
		t.Errorf("%v commits for %d writes; want 1 to %d", got.Commits, 2*n, 2*n)
	}
	if got.CommitsOfKind["claim"] > got.Commits || got.CommitsOfKind["finish"] > got.Commits {
		t.Errorf("commits of a kind (%v) exceed the commits (%v)", got.CommitsOfKind, got.Commits)
	}
}
