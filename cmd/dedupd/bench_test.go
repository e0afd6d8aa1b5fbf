package main

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// BenchmarkGRPC measures the real binary over loopback gRPC, with the
// client, the server and the database sharing this machine:
//
//	go test -run '^$' -bench GRPC -benchtime 5s ./cmd/dedupd
//
// Each op is one call (claim-new) or one Claim plus one Complete (cycle),
// from 32 concurrent callers.
func BenchmarkGRPC(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			srv := startDedupd(b, be.prepare(b)...)
			c := dedupv1.NewDedupServiceClient(srv.dial(b))
			var next atomic.Int64
			b.Run("claim-new", func(b *testing.B) {
				runParallel(b, func(ctx context.Context) error {
					_, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: fmt.Sprint("n", next.Add(1))})
					return err
				})
			})
			b.Run("cycle", func(b *testing.B) {
				runParallel(b, func(ctx context.Context) error {
					key := fmt.Sprint("c", next.Add(1))
					got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: key})
					if err != nil {
						return err
					}
					_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "bench", Key: key,
						FencingToken: got.GetFencingToken(), Result: []byte("ok")})
					return err
				})
			})
			srv.stop(b)
		})
	}
}

// runParallel runs op from 32 goroutines and reports ops per second.
func runParallel(b *testing.B, op func(context.Context) error) {
	b.SetParallelism(max(1, 32/testingCPUs()))
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			if err := op(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}

func testingCPUs() int { return runtime.GOMAXPROCS(0) }
