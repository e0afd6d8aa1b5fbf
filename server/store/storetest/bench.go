package storetest

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// BenchCallers is the concurrency the stores' throughput targets are set
// at.
const BenchCallers = 32

// SetBenchCallers makes b.RunParallel use about BenchCallers goroutines.
func SetBenchCallers(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((BenchCallers + procs - 1) / procs)
}

// BenchCycle measures Claim + Complete of fresh keys at b's parallelism,
// the work of one deduplicated request; one op is one cycle.
func BenchCycle(b *testing.B, s store.Store) {
	result := []byte(`{"status":"ok","id":12345}`)
	benchFreshKeys(b, s, "cycles/s", func(ctx context.Context, res store.ClaimResult) error {
		_, err := s.Complete(ctx, store.CompleteParams{
			Consumer: "bench", Key: res.Record.Key, FencingToken: res.Record.FencingToken, Result: result, Policy: policy(),
		})
		return err
	})
}

// BenchClaimNew measures claims of fresh keys alone; one op is one claim.
func BenchClaimNew(b *testing.B, s store.Store) {
	benchFreshKeys(b, s, "claims/s", nil)
}

// benchFreshKeys claims a fresh key per op, at b's parallelism, and then
// runs then (if any) on what the claim acquired; it reports ops/s as
// unit.
func benchFreshKeys(b *testing.B, s store.Store, unit string, then func(context.Context, store.ClaimResult) error) {
	ctx := context.Background()
	digest := []byte("0123456789abcdef0123456789abcdef")
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := "key-" + strconv.FormatInt(next.Add(1), 10)
			res, err := s.Claim(ctx, store.ClaimParams{Consumer: "bench", Key: key, Digest: digest, Owner: "worker", Policy: policy()})
			if err != nil || res.Outcome != store.Acquired {
				b.Errorf("Claim %s: %v %v", key, res.Outcome, err)
				return
			}
			if then == nil {
				continue
			}
			if err := then(ctx, res); err != nil {
				b.Errorf("after the claim of %s: %v", key, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), unit)
}
