package replaycache_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/replaycache"
)

// BenchmarkClaimHit measures a replayed claim answered from memory, from 32
// goroutines over 1,000 completed keys: the cost the cache puts in place of
// a database round trip.
//
//	go test -run '^$' -bench ClaimHit ./server/store/replaycache/
func BenchmarkClaimHit(b *testing.B) {
	s, inner, _ := newCached(b, replaycache.Options{MaxBytes: 64 << 20})
	const keys = 1000
	for i := range keys {
		finish(b, s, fmt.Sprint("key-", i), false)
	}
	before := inner.claims.Load()
	var next atomic.Int64
	b.SetParallelism((32 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := s.Claim(context.Background(), claimP(fmt.Sprint("key-", next.Add(1)%keys)))
			if err != nil || res.Outcome != store.AlreadyCompleted {
				b.Errorf("replay: %v, %v", res.Outcome, err)
				return
			}
		}
	})
	if n := inner.claims.Load() - before; n != 0 {
		b.Errorf("%d claims reached the store", n)
	}
}
