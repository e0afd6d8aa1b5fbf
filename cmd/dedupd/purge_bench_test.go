package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pebblestore"
	"github.com/dedupd/dedupd/server/store/pgstore"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// BenchmarkPurge100k purges 100,000 records of one consumer through the
// real binary's Purge RPC while one caller claims keys of another consumer,
// and reports the server's memory and that caller's claim latency, idle and
// during the purge. It is a measurement, not a pass/fail test; run it once:
//
//	go test -run '^$' -bench Purge100k -benchtime 1x -timeout 30m ./cmd/dedupd
//
// Metrics: purge_s, records/s, rss_before_MiB, rss_peak_MiB (sampled
// every 20ms while the purge runs), rss_after_MiB, and the claim latency
// percentiles idle_p50_ms, idle_p99_ms, purge_p50_ms, purge_p99_ms.
func BenchmarkPurge100k(b *testing.B) {
	const records = 100_000
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			flags := be.prepare(b)
			seed(b, flags, records)
			srv := startDedupd(b, flags...)
			c := dialBoth(b, srv)
			pid := srv.Cmd.Process.Pid
			b.ResetTimer()
			for range b.N {
				idle := claimLatencies(b, c, "idle", 2*time.Second, nil)
				before := rssKiB(b, pid)
				peak := newPeakSampler(b, pid)
				done := make(chan struct{})
				var during []time.Duration
				var wg sync.WaitGroup
				wg.Go(func() { during = claimLatencies(b, c, "during", 0, done) })
				start := time.Now()
				stream, err := c.admin.Purge(context.Background(), &dedupv1.PurgeRequest{Consumer: "bulk"})
				if err != nil {
					b.Fatal(err)
				}
				var deleted int64
				for {
					msg, err := stream.Recv()
					if err != nil {
						b.Fatal(err)
					}
					if deleted = msg.GetDeleted(); msg.GetDone() {
						break
					}
				}
				took := time.Since(start)
				close(done)
				wg.Wait()
				peakKiB := peak.stop()
				if deleted != records {
					b.Fatalf("purge deleted %d, want %d", deleted, records)
				}
				b.ReportMetric(took.Seconds(), "purge_s")
				b.ReportMetric(float64(deleted)/took.Seconds(), "records/s")
				b.ReportMetric(float64(before)/1024, "rss_before_MiB")
				b.ReportMetric(float64(peakKiB)/1024, "rss_peak_MiB")
				b.ReportMetric(float64(rssKiB(b, pid))/1024, "rss_after_MiB")
				b.ReportMetric(ms(percentile(idle, 50)), "idle_p50_ms")
				b.ReportMetric(ms(percentile(idle, 99)), "idle_p99_ms")
				b.ReportMetric(ms(percentile(during, 50)), "purge_p50_ms")
				b.ReportMetric(ms(percentile(during, 99)), "purge_p99_ms")
				b.Logf("%d claims idle, %d during the purge", len(idle), len(during))
			}
		})
	}
}

// seed stores n pending records of consumer "bulk" straight through the
// store (no server runs yet), with SQLite's fsync relaxed, on the engine
// flags serve with.
func seed(b *testing.B, flags []string, n int) {
	ctx := context.Background()
	var st store.Store
	var err error
	switch {
	case flags[0] == "--data-dir" && slices.Contains(flags, "pebble"):
		st, err = pebblestore.Open(ctx, flags[1], pebblestore.Options{})
	case flags[0] == "--data-dir":
		st, err = sqlitestore.Open(ctx, flags[1], sqlitestore.Options{Sync: sqlitestore.SyncNormal})
	case flags[0] == "--database-url":
		st, err = pgstore.Open(ctx, flags[1], pgstore.Options{})
	default:
		b.Fatalf("unknown backend flags %v", flags)
	}
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	policy := store.Policy{DefaultLeaseTTL: time.Hour, CompletedTTL: 24 * time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	const workers = 16
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				if _, err := st.Claim(ctx, store.ClaimParams{Consumer: "bulk", Key: fmt.Sprintf("k-%07d", i), Policy: policy}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// claimLatencies claims fresh keys of another consumer one after another,
// for d or until done is closed, and returns each call's latency.
func claimLatencies(b *testing.B, c adminClients, prefix string, d time.Duration, done <-chan struct{}) []time.Duration {
	var out []time.Duration
	end := time.Now().Add(d)
	for i := 0; ; i++ {
		if done == nil && time.Now().After(end) {
			return out
		}
		select {
		case <-done:
			return out
		default:
		}
		start := time.Now()
		if _, err := c.dedup.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: "hot", Key: fmt.Sprint(prefix, i)}); err != nil {
			b.Error(err)
			return out
		}
		out = append(out, time.Since(start))
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// rssKiB reads a process's resident set size from /proc.
func rssKiB(b *testing.B, pid int) int64 {
	kib, err := readRSS(pid)
	if err != nil {
		b.Fatal(err)
	}
	return kib
}

func readRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// peakSampler polls a process's RSS and keeps the highest.
type peakSampler struct {
	stopCh chan struct{}
	peak   chan int64
}

func newPeakSampler(b *testing.B, pid int) *peakSampler {
	s := &peakSampler{stopCh: make(chan struct{}), peak: make(chan int64, 1)}
	go func() {
		var peak int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			kib, err := readRSS(pid)
			if err != nil {
				b.Error(err)
			}
			peak = max(peak, kib)
			select {
			case <-s.stopCh:
				s.peak <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *peakSampler) stop() int64 {
	close(s.stopCh)
	return <-s.peak
}
