package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
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
		{"whole server", []string{"--server", p.Addr}, true, "SERVING"},
		{"one service", []string{"--server", p.Addr, "--service", "dedup.v1.DedupService"}, true, "SERVING"},
		{"older flag name", []string{"--addr", p.Addr}, true, "SERVING"},
		{"unknown service", []string{"--server", p.Addr, "--service", "no.such.Service"}, false, "NotFound"},
		{"nothing listening", []string{"--server", "127.0.0.1:1", "--timeout", "30s"}, false, "Unavailable"},
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

// TestProbeReadsDedupdAddr: the probe takes its address from DEDUPD_ADDR,
// the variable every dedupd client reads, ahead of the older DEDUPD_SERVER;
// --server on the command line wins over both.
func TestProbeReadsDedupdAddr(t *testing.T) {
	p := startDedupd(t, "--data-dir", t.TempDir())
	const nowhere = "127.0.0.1:1"
	for _, tc := range []struct {
		name   string
		env    []string
		args   []string
		wantOK bool
	}{
		{"DEDUPD_ADDR", []string{"DEDUPD_ADDR=" + p.Addr}, nil, true},
		{"DEDUPD_ADDR over DEDUPD_SERVER", []string{"DEDUPD_ADDR=" + p.Addr, "DEDUPD_SERVER=" + nowhere}, nil, true},
		{"DEDUPD_SERVER alone", []string{"DEDUPD_SERVER=" + p.Addr}, nil, true},
		{"flag over DEDUPD_ADDR", []string{"DEDUPD_ADDR=" + nowhere}, []string{"--server", p.Addr}, true},
		{"DEDUPD_ADDR elsewhere", []string{"DEDUPD_ADDR=" + nowhere}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, dedupdBin, append([]string{"probe", "--timeout", "30s"}, tc.args...)...)
			cmd.Env = append(withoutAddrEnv(), tc.env...)
			out, err := cmd.CombinedOutput()
			if (err == nil) != tc.wantOK {
				t.Fatalf("probe with %v %v: err %v, want ok %v; output %q", tc.env, tc.args, err, tc.wantOK, out)
			}
		})
	}
}

// withoutAddrEnv is this process's environment without the variables
// that name dedupd's address.
func withoutAddrEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DEDUPD_ADDR=") && !strings.HasPrefix(kv, "DEDUPD_SERVER=") && !strings.HasPrefix(kv, "DEDUPCTL_SERVER=") {
			env = append(env, kv)
		}
	}
	return env
}
