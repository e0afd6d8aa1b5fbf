package pgstore_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// BenchmarkClaimNew measures claims of fresh keys, the fast path: one INSERT
// per claim. clients=32 runs 32 goroutines whatever GOMAXPROCS is.
//
//	go test -run '^$' -bench ClaimNew -benchtime 5s ./server/store/pgstore/
func BenchmarkClaimNew(b *testing.B) {
	for _, clients := range []int{1, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			s := newStore(b)
			ctx := context.Background()
			var next atomic.Int64
			claimNext := func() {
				p := claimParams(fmt.Sprintf("key-%d", next.Add(1)))
				if _, err := s.Claim(ctx, p); err != nil {
					b.Error(err)
				}
			}
			b.ResetTimer()
			if clients == 1 {
				for range b.N {
					claimNext()
				}
			} else {
				// RunParallel starts parallelism × GOMAXPROCS goroutines.
				procs := runtime.GOMAXPROCS(0)
				b.SetParallelism((clients + procs - 1) / procs)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						claimNext()
					}
				})
			}
			b.ReportMetric(float64(next.Load())/b.Elapsed().Seconds(), "claims/s")
		})
	}
}
