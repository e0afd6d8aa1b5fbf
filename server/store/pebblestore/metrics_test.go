package pebblestore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
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

// gatedFS holds back the creation of every table file until open is
// closed, so that no flush can finish meanwhile.
type gatedFS struct {
	vfs.FS
	open chan struct{}
}

func (g gatedFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if strings.HasSuffix(name, ".sst") {
		<-g.open
	}
	return g.FS.Create(name, category)
}

// While no flush can finish, claims fill the memtables until Pebble holds
// every write back; the stall is counted, with its time, and the claims
// held back go through once flushes can finish again. (A stall the store
// never counts keeps the gate shut: the test then fails by go test's
// timeout, the writer held back for good.)
func TestWriteStallsAreCounted(t *testing.T) {
	ctx := context.Background()
	gate := make(chan struct{})
	s, err := Open(ctx, t.TempDir(), Options{fs: gatedFS{FS: vfs.Default, open: gate}, memTableBytes: 256 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.Collector())
	const claims = 5000
	policy := store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	written := make(chan int, 1)
	go func() {
		n := 0
		for i := range claims {
			if c, err := s.Claim(ctx, store.ClaimParams{Consumer: "c", Key: fmt.Sprint("k", i), Owner: "o", Policy: policy}); err == nil && c.Outcome == store.Acquired {
				n++
			}
		}
		written <- n
	}()
	for s.events.stalls.Load() == 0 {
		select {
		case n := <-written:
			close(gate)
			t.Fatalf("%d claims with no flush able to finish, and Pebble never stalled", n)
		default:
			time.Sleep(time.Millisecond)
		}
	}
	close(gate)
	if n := <-written; n != claims {
		t.Errorf("%d of %d claims acquired", n, claims)
	}
	got := gatherPebble(t, reg)
	if got["dedupd_pebble_write_stalls_total"] < 1 || got["dedupd_pebble_write_stall_seconds_total"] <= 0 {
		t.Errorf("write stalls %v, for %v s; want at least one, for some time",
			got["dedupd_pebble_write_stalls_total"], got["dedupd_pebble_write_stall_seconds_total"])
	}
}
