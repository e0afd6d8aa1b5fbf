package enginebench

import (
	"context"
	"slices"
	"testing"

	"github.com/dedupd/dedupd/internal/loadtest"
)

// Each engine runs every scenario that has an in-process form with the
// answers each demands (a new key must acquire, a replay must return the
// stored result: the scenarios check them and count a wrong one as an
// error), and the run refuses the scenarios that need the service.
func TestEnginesRunTheKeyScenarios(t *testing.T) {
	keyScenarios := []string{"claim-new", "cycle", "replay", "contended", "mixed"}
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			e, err := Open(context.Background(), engine, t.TempDir(), 16)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			report, err := loadtest.Run(context.Background(), loadtest.Config{Direct: e, Concurrency: 4, Count: 200,
				ReplayKeys: 50, ResultBytes: 16})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, s := range report.Scenarios {
				names = append(names, s.Name)
				if s.Service.Ops != 200 || s.Service.Errors != 0 {
					t.Errorf("%s: %d ops, %d errors (first: %s); want 200 and none", s.Name, s.Service.Ops, s.Service.Errors, s.Service.FirstError)
				}
				// Measured, though it may round to 0 (/proc counts in ticks).
				if s.Service.CPU == nil {
					t.Errorf("%s: no CPU per op measured", s.Name)
				}
			}
			if !slices.Equal(names, keyScenarios) {
				t.Errorf("default scenarios in process: %v, want %v", names, keyScenarios)
			}
			for _, s := range []string{"claim-batch", "stream-cycle", "floor"} {
				if _, err := loadtest.Run(context.Background(), loadtest.Config{Direct: e, Count: 1, Scenarios: []string{s}}); err == nil {
					t.Errorf("in process, scenario %s was accepted", s)
				}
			}
		})
	}
	if _, err := Open(context.Background(), "bolt", t.TempDir(), 0); err == nil {
		t.Error("an unknown engine was opened")
	}
}
