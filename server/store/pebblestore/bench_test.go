package pebblestore_test

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// callers is the concurrency the throughput targets are set at.
const callers = 32

func setCallers(b *testing.B) {
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((callers + procs - 1) / procs)
}

// BenchmarkCycle measures claim + complete of fresh keys at 32 callers;
// one op is one cycle. dedupctl bench --in-process pebble measures the same
// with the bench's scenarios and CPU per op.
//
//	go test -run '^$' -bench 'Cycle$' -benchtime 3s ./server/store/pebblestore/
func BenchmarkCycle(b *testing.B) {
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
			res, err := s.Claim(ctx, store.ClaimParams{Consumer: "bench", Key: key, Digest: digest, Owner: "w", Policy: policy})
			if err != nil || res.Outcome != store.Acquired {
				b.Errorf("claim %s: %v %v", key, res.Outcome, err)
				return
			}
			if _, err := s.Complete(ctx, store.CompleteParams{Consumer: "bench", Key: key,
				FencingToken: res.Record.FencingToken, Result: []byte("ok"), Policy: policy}); err != nil {
				b.Errorf("complete %s: %v", key, err)
				return
			}
		}
	})
}

// BenchmarkStreamCycle and BenchmarkParkCycle are the suite's stream
// benchmarks at 32 callers, each on its own stream.
//
//	go test -run '^$' -bench 'StreamCycle|ParkCycle' -benchtime 3s ./server/store/pebblestore/
func BenchmarkStreamCycle(b *testing.B) {
	s := newStore(b)
	setCallers(b)
	storetest.BenchStreamCycle(b, s)
}

func BenchmarkParkCycle(b *testing.B) {
	s := newStore(b)
	setCallers(b)
	storetest.BenchParkCycle(b, s)
}
