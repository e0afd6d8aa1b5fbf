package sqlitestore_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// callers is the concurrency the throughput target is set at.
const callers = 32

// setCallers makes b.RunParallel use about callers goroutines.
func setCallers(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((callers + procs - 1) / procs)
}

// BenchmarkCycle measures claim + complete of fresh keys, the work of one
// deduplicated request; one op is one cycle. It runs with each Sync.
//
//	go test -run '^$' -bench Cycle -benchtime 3s ./server/store/sqlitestore/
func BenchmarkCycle(b *testing.B) {
	for _, batch := range []int{0, 1} {
		for _, sync := range []string{"full", "normal"} {
			name := "group/sync=" + sync
			if batch == 1 {
				name = "single/sync=" + sync
			}
			b.Run(name, func(b *testing.B) {
				mode, err := sqlitestore.ParseSync(sync)
				if err != nil {
					b.Fatal(err)
				}
				s := openStoreWith(b, b.TempDir(), sqlitestore.Options{Sync: mode, MaxBatch: batch})
				b.Cleanup(func() { s.Close() })
				benchmarkCycle(b, s)
			})
		}
	}
}

func benchmarkCycle(b *testing.B, s *sqlitestore.Store) {
	ctx := context.Background()
	digest := []byte("0123456789abcdef0123456789abcdef")
	result := []byte(`{"status":"ok","id":12345}`)
	var next atomic.Int64
	setCallers(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := "key-" + strconv.FormatInt(next.Add(1), 10)
			res, err := s.Claim(ctx, store.ClaimParams{
				Consumer: "bench", Key: key, Digest: digest, Owner: "worker", Policy: policy,
			})
			if err != nil || res.Outcome != store.Acquired {
				b.Errorf("Claim: %v %v", res.Outcome, err)
				return
			}
			if _, err := s.Complete(ctx, store.CompleteParams{
				Consumer: "bench", Key: key, FencingToken: res.Record.FencingToken, Result: result, Policy: policy,
			}); err != nil {
				b.Errorf("Complete: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}

// BenchmarkClaimNew measures claims of fresh keys alone.
func BenchmarkClaimNew(b *testing.B) {
	s := newStore(b)
	ctx := context.Background()
	digest := []byte("0123456789abcdef0123456789abcdef")
	var next atomic.Int64
	setCallers(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			key := "key-" + strconv.FormatInt(next.Add(1), 10)
			if _, err := s.Claim(ctx, store.ClaimParams{
				Consumer: "bench", Key: key, Digest: digest, Owner: "worker", Policy: policy,
			}); err != nil {
				b.Errorf("Claim: %v", err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "claims/s")
}

// BenchmarkStreamCycle measures claim + complete of a stream's next event
// at 32 callers, each on its own stream.
//
//	go test -run '^$' -bench StreamCycle -benchtime 3s ./server/store/sqlitestore/
func BenchmarkStreamCycle(b *testing.B) {
	s := newStore(b)
	setCallers(b)
	storetest.BenchStreamCycle(b, s)
}

// BenchmarkParkCycle measures park mode (park, claim, complete with a
// hand-off, complete) at 32 callers, each on its own stream.
//
//	go test -run '^$' -bench ParkCycle -benchtime 3s ./server/store/sqlitestore/
func BenchmarkParkCycle(b *testing.B) {
	s := newStore(b)
	setCallers(b)
	storetest.BenchParkCycle(b, s)
}
