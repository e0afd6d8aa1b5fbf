package loadtest

import (
	"context"
	"slices"
	"testing"
)

// The in-process engine runs every scenario that has an in-process form
// with the answers each demands (a new key must acquire, a replay must
// return the stored result), on both engines, and refuses the batch ones.
func TestInProcessEngines(t *testing.T) {
	for _, engine := range Engines {
		t.Run(engine, func(t *testing.T) {
			report, err := Run(context.Background(), Config{InProcess: engine, InProcessDir: t.TempDir(), Concurrency: 4, Count: 200,
				ReplayKeys: 50, Scenarios: []string{"claim-new", "cycle", "replay", "contended", "mixed"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range report.Scenarios {
				if s.Service.Ops != 200 || s.Service.Errors != 0 {
					t.Errorf("%s: %d ops, %d errors (first: %s); want 200 and none", s.Name, s.Service.Ops, s.Service.Errors, s.Service.FirstError)
				}
				// Measured, though it may round to 0 (/proc counts in ticks).
				if s.Service.CPU == nil {
					t.Errorf("%s: no CPU per op measured", s.Name)
				}
			}
		})
	}
	cfg := Config{InProcess: "pebble"}
	if err := cfg.defaults(); err != nil || slices.Contains(cfg.Scenarios, "claim-batch") {
		t.Fatalf("in-process defaults = %v, %v; want the scenarios without batches", cfg.Scenarios, err)
	}
	cfg = Config{InProcess: "pebble", Scenarios: []string{"claim-batch"}}
	if err := cfg.defaults(); err == nil {
		t.Fatal("an in-process claim-batch was accepted")
	}
}
