package main

import (
	"encoding/json"
	"os"
	"testing"
)

// dedupd bench-engine drives the engine it is given, in its own process,
// for the exact count asked, with every answer as the scenario demands,
// and leaves the store in the directory it was given.
func TestBenchEngine(t *testing.T) {
	dir := t.TempDir()
	out, err := runDedupd(t, "bench-engine", "--engine", "pebble", "--dir", dir, "--scenarios", "cycle,replay",
		"-n", "100", "-c", "4", "--replay-keys", "20", "-o", "json")
	if err != nil {
		t.Fatalf("bench-engine: %v\n%s", err, out)
	}
	var report struct {
		Addr      string `json:"addr"`
		Scenarios []struct {
			Name    string `json:"name"`
			Service struct {
				Ops    int64 `json:"ops"`
				Errors int64 `json:"errors"`
			} `json:"service"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	if report.Addr != "in process: pebble engine" || len(report.Scenarios) != 2 {
		t.Fatalf("report of %q with %d scenarios, want the pebble engine's two:\n%s", report.Addr, len(report.Scenarios), out)
	}
	for _, s := range report.Scenarios {
		if s.Service.Ops != 100 || s.Service.Errors != 0 {
			t.Errorf("%s: %d ops, %d errors; want 100 and none", s.Name, s.Service.Ops, s.Service.Errors)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) == 0 {
		t.Errorf("the store's directory holds %d entries (%v)", len(entries), err)
	}
	if out, err := runDedupd(t, "bench-engine", "--engine", "bolt", "-n", "1"); err == nil {
		t.Errorf("an unknown engine was accepted:\n%s", out)
	}
}
