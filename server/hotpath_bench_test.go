package server

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
)

// BenchmarkHotPath is the whole in-process gRPC path of `dedupd serve`
// (interceptors, decoding, handler, replay cache, store metrics) over
// bufconn, from 32 callers, with a logger that writes nothing. The
// store is the embedded one with group commit. allocs/op counts the client
// side too (it shares the process); floor, an empty health Check, shows how
// much of it that is.
//
//	go test -run '^$' -bench HotPath -benchtime 3s ./server
func BenchmarkHotPath(b *testing.B) {
	cfg := testConfig()
	cfg.GroupCommit, cfg.ReplayCacheBytes, cfg.ReplayCacheTTL = true, 32<<20, time.Minute
	cfg.MaxInFlight, cfg.PolicyCacheTTL = 1024, 5*time.Second // the defaults of `dedupd serve`
	log := slog.New(slog.DiscardHandler)
	backend, err := sqlitestore.Open(context.Background(), b.TempDir(), sqlitestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	m := metrics.New()
	g, _, err := newGuards(cfg, m, log)
	if err != nil {
		b.Fatal(err)
	}
	st := stack.Build(backend, storeStack(cfg, m, nil, g.waits))
	defer st.Close()
	hs := health.NewServer()
	srv := newServices(cfg, log, hs, g, st, newPolicies(cfg, st))
	conn := grpctest.ServeInMemory(b, srv)
	c := dedupv1.NewDedupServiceClient(conn)
	ctx := context.Background()
	const replayKeys = 1000
	digest := []byte("0123456789abcdef0123456789abcdef")
	for i := range replayKeys {
		key := fmt.Sprint("replay-", i)
		res, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: key, Digest: digest})
		if err == nil {
			_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "bench", Key: key,
				FencingToken: res.GetFencingToken(), Result: make([]byte, 64)})
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	keys := make([]string, replayKeys)
	for i := range keys {
		keys[i] = fmt.Sprint("replay-", i)
	}
	run := func(name string, op func() error) {
		b.Run(name, func(b *testing.B) {
			b.SetParallelism(max(1, 32/testingCPUs()))
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
	hc := healthpb.NewHealthClient(conn)
	run("floor", func() error {
		_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	})
	run("claim-replay", func() error {
		res, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: keys[next.Add(1)%replayKeys], Digest: digest})
		if err == nil && res.GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED {
			err = fmt.Errorf("replay: %v", res.GetOutcome())
		}
		return err
	})
	run("claim-new", func() error {
		_, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: fmt.Sprint("new-", next.Add(1)), Digest: digest})
		return err
	})
	run("cycle", func() error { // claim a new key and complete it: two calls an op
		key := fmt.Sprint("cycle-", next.Add(1))
		res, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: key, Digest: digest})
		if err == nil {
			_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "bench", Key: key,
				FencingToken: res.GetFencingToken(), Result: make([]byte, 64)})
		}
		return err
	})
}

func testingCPUs() int { return runtime.GOMAXPROCS(0) }
