package main

import (
	"strings"
	"testing"
)

// TestProbe runs `dedupd probe` as an image's HEALTHCHECK would: exit 0
// and SERVING against a serving dedupd, and a failure for a service the
// server does not have or an address where nothing listens.
func TestProbe(t *testing.T) {
	p := startDedupd(t, "--data-dir", t.TempDir())
	tests := []struct {
		name     string
		args     []string
		wantOK   bool
		wantText string
	}{
		{"whole server", []string{"--addr", p.Addr}, true, "SERVING"},
		{"one service", []string{"--addr", p.Addr, "--service", "dedup.v1.DedupService"}, true, "SERVING"},
		{"unknown service", []string{"--addr", p.Addr, "--service", "no.such.Service"}, false, "NotFound"},
		{"nothing listening", []string{"--addr", "127.0.0.1:1", "--timeout", "30s"}, false, "Unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runDedupd(t, append([]string{"probe"}, tt.args...)...)
			if (err == nil) != tt.wantOK {
				t.Errorf("probe %v: err = %v, want ok %v; output %q", tt.args, err, tt.wantOK, out)
			}
			if !strings.Contains(out, tt.wantText) {
				t.Errorf("probe %v said %q, want it to name %s", tt.args, out, tt.wantText)
			}
		})
	}
}
