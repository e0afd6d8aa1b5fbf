package pgstore_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/pgstore"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// BenchmarkClaimNew measures claims of fresh keys, the fast path: one INSERT
// per claim. clients=32 runs 32 goroutines whatever GOMAXPROCS is.
//
//	go test -run '^$' -bench ClaimNew -benchtime 5s ./server/store/pgstore/
func BenchmarkClaimNew(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts pgstore.Options
	}{{"group", pgstore.Options{}}, {"single", pgstore.Options{MaxBatch: 1}}} {
		b.Run(mode.name, func(b *testing.B) { benchmarkClaimNew(b, mode.opts) })
	}
}

func benchmarkClaimNew(b *testing.B, opts pgstore.Options) {
	for _, clients := range []int{1, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			s := newStoreWith(b, opts)
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

// attemptCounter counts versioned reads: one per read-modify-write attempt,
// or per batch of them with group commit. Without group commit, reads/op
// above 1 are lost compare-and-set races or serialization failures, retried.
type attemptCounter struct{ n atomic.Int64 }

func (c *attemptCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "row_version, statement_timestamp()") {
		c.n.Add(1)
	}
	return ctx
}

func (c *attemptCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// BenchmarkCycle measures claim + complete of fresh keys from 32 goroutines,
// with group commit and without, and how many reads of a record each cycle
// took (a read per Complete alone; a batch reads many keys at once, so
// with group commit it is mostly below one).
//
//	go test -run '^$' -bench Cycle -benchtime 5s ./server/store/pgstore/
func BenchmarkCycle(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts pgstore.Options
	}{{"group", pgstore.Options{}}, {"single", pgstore.Options{MaxBatch: 1}}} {
		b.Run(mode.name, func(b *testing.B) { benchmarkCycle(b, mode.opts) })
	}
}

func benchmarkCycle(b *testing.B, opts pgstore.Options) {
	var attempts attemptCounter
	s, err := pgstore.OpenTraced(context.Background(), pgtest.URL(b), opts, &attempts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	migrated(b, s)
	ctx := context.Background()
	var next atomic.Int64
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((32 + procs - 1) / procs)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p := claimParams(fmt.Sprintf("key-%d", next.Add(1)))
			res, err := s.Claim(ctx, p)
			if err == nil {
				_, err = s.Complete(ctx, store.CompleteParams{Consumer: p.Consumer, Key: p.Key,
					FencingToken: res.Record.FencingToken, Result: []byte("ok"), Policy: policy})
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(next.Load())/b.Elapsed().Seconds(), "cycles/s")
	b.ReportMetric(float64(attempts.n.Load())/float64(next.Load()), "reads/op")
}

// BenchmarkStreamCycle measures claim + complete of a stream's next event
// at 32 callers, each on its own stream: a read and a compare-and-set per
// call, as for a key that already has a record.
//
//	go test -run '^$' -bench StreamCycle -benchtime 5s ./server/store/pgstore/
func BenchmarkStreamCycle(b *testing.B) {
	s := newStoreWith(b, pgstore.Options{})
	b.SetParallelism((32 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	storetest.BenchStreamCycle(b, s)
}

// BenchmarkParkCycle measures park mode (park, claim, complete with a
// hand-off, complete) at 32 callers, each on its own stream: the writes of
// a stream with parked events run as a transaction with them.
//
//	go test -run '^$' -bench ParkCycle -benchtime 5s ./server/store/pgstore/
func BenchmarkParkCycle(b *testing.B) {
	s := newStoreWith(b, pgstore.Options{})
	b.SetParallelism((32 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	storetest.BenchParkCycle(b, s)
}
