package pebblestore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupd/dedupd/server/store"
)

// The engine metrics report what the store did: a filter sized for the
// smallest capacity (65,536 keys at 10 bits a key, in 64-byte blocks:
// 1,281 blocks, 81,984 bytes) holding the 100 keys claimed, one build, a
// flush that wrote tables, no misuse; and nothing once the store is closed.
func TestEngineMetricsReportTheStore(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	waitForFilter(t, s)
	policy := store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	for i := range 100 {
		c, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: fmt.Sprint("k", i), Owner: "o", Policy: policy})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Complete(ctx, store.CompleteParams{Consumer: "c", Key: c.Record.Key, FencingToken: c.Record.FencingToken, Policy: policy}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	got := gatherPebble(t, reg)
	for name, want := range map[string]float64{
		"dedupd_pebble_key_filter_bytes":         81984,
		"dedupd_pebble_key_filter_capacity_keys": 65536,
		"dedupd_pebble_key_filter_keys":          100,
		"dedupd_pebble_key_filter_builds_total":  1,
		"dedupd_pebble_api_misuses_total":        0,
	} {
		if got[name] != want {
			t.Errorf("%s = %v, want %v", name, got[name], want)
		}
	}
	for _, name := range []string{"dedupd_pebble_flushes_total", "dedupd_pebble_table_bytes_written_total",
		"dedupd_pebble_wal_bytes_written_total", "dedupd_pebble_disk_bytes"} {
		if got[name] <= 0 {
			t.Errorf("%s = %v after 200 writes and a flush, want > 0", name, got[name])
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := gatherPebble(t, reg); len(got) != 0 {
		t.Errorf("a closed store reports %v", got)
	}
}

func gatherPebble(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "dedupd_pebble_") {
			continue
		}
		m := f.GetMetric()[0]
		out[f.GetName()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
	}
	return out
}
