package server

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/health"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
)

// maxReplayAllocs bounds the allocations of one replayed Claim through the
// whole in-process path of `dedupd serve` (BenchmarkHotPath's), client side
// included, one call at a time: 182 when it was set (188 under -race), 207
// before issue 21's cuts (213), of which a stats.Handler alone was 18. The
// headroom is for grpc-go's own variation; a bound crossed means a cut came
// undone or a new per-call cost came in. It counts allocations, not time,
// so a busy machine does not move it.
const maxReplayAllocs = 196

func TestReplayedClaimAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("serves a whole server")
	}
	cfg := testConfig()
	cfg.GroupCommit, cfg.ReplayCacheBytes, cfg.ReplayCacheTTL = true, 32<<20, time.Hour
	cfg.MaxInFlight, cfg.PolicyCacheTTL = 1024, time.Hour
	log := slog.New(slog.DiscardHandler)
	backend, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	g, _, err := newGuards(cfg, m, log)
	if err != nil {
		t.Fatal(err)
	}
	st := stack.Build(backend, storeStack(cfg, m, nil, g.waits))
	t.Cleanup(func() { st.Close() })
	c := dedupv1.NewDedupServiceClient(grpctest.ServeInMemory(t, newServices(cfg, log, health.NewServer(), g, st, newPolicies(cfg, st))))
	ctx := context.Background()
	claim := &dedupv1.ClaimRequest{Consumer: "allocs", Key: "k", Digest: []byte("0123456789abcdef0123456789abcdef")}
	res, err := c.Claim(ctx, claim)
	if err == nil {
		_, err = c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "allocs", Key: "k", FencingToken: res.GetFencingToken(), Result: make([]byte, 64)})
	}
	if err != nil {
		t.Fatal(err)
	}
	var failed error
	allocs := testing.AllocsPerRun(200, func() {
		res, err := c.Claim(ctx, claim)
		if err == nil && res.GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED {
			t.Errorf("outcome %v, want a replay", res.GetOutcome())
		}
		if err != nil {
			failed = err
		}
	})
	if failed != nil {
		t.Fatal(failed)
	}
	t.Logf("%.0f allocations a replayed claim", allocs)
	if allocs > maxReplayAllocs {
		t.Errorf("a replayed claim makes %.0f allocations, more than %d", allocs, maxReplayAllocs)
	}
}
