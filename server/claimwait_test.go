package server

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/health"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/testing/grpctest"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// waitingStack is the whole in-process path of `dedupd serve` (guards,
// interceptors, services, replay cache) on an embedded store, over
// bufconn, with the guards kept for their counts; wrap, when set, wraps
// the store under the decorator stack.
func waitingStack(tb testing.TB, cfg Config, wrap ...func(store.Backend) store.Backend) (dedupv1.DedupServiceClient, guards) {
	tb.Helper()
	log := slog.New(slog.DiscardHandler)
	backend, err := sqlitestore.Open(context.Background(), tb.TempDir(), sqlitestore.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	var engine store.Engine = backend
	for _, w := range wrap {
		engine = storetest.AsEngine(w(backend))
	}
	m := metrics.New()
	g, _, err := newGuards(cfg, m, log)
	if err != nil {
		tb.Fatal(err)
	}
	st := stack.Build(engine, storeStack(cfg, m, nil, g.waits))
	tb.Cleanup(func() { st.Close() })
	srv := newServices(cfg, log, health.NewServer(), g, st, newPolicies(cfg, st))
	return dedupv1.NewDedupServiceClient(grpctest.ServeInMemory(tb, srv)), g
}

// untilAsleep blocks until n waiters sleep, or reports false when ended
// delivers first (the waiter answered without waiting).
func untilAsleep[T any](r *claimwait.Registry, n int, ended <-chan T) bool {
	for r.Asleep() != n {
		select {
		case <-ended:
			return false
		case <-time.After(100 * time.Microsecond):
		}
	}
	return true
}

// A waiting claim holds no in-flight slot, no longer counts as arrived and
// holds no reply bytes: with room for one call and none waiting, the
// holder's Complete gets in while the waiter waits, and wakes it.
func TestWaitingClaimGivesBackItsSlot(t *testing.T) {
	cfg := testConfig()
	cfg.MaxInFlight, cfg.MaxWaiting = 1, 0
	cfg.ClaimWait = claimwait.Options{MaxWait: time.Minute, Poll: time.Hour}
	c, g := waitingStack(t, cfg)
	ctx := context.Background()
	held, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", LeaseTtl: durationpb.New(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	reply := make(chan *dedupv1.ClaimResponse, 1)
	go func() {
		res, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "c", Key: "k", Wait: durationpb.New(time.Minute)})
		if err != nil {
			t.Error(err)
		}
		reply <- res
	}()
	if !untilAsleep(g.waits, 1, reply) {
		t.Fatal("the claim answered without waiting")
	}
	if n, bytes := g.inflight.Running(), g.replies.InUse(); n != 0 || bytes != 0 {
		t.Fatalf("%d slots and %d reply bytes held while the only call waits", n, bytes)
	}
	if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "c", Key: "k", FencingToken: held.GetFencingToken(), Result: []byte("r")}); err != nil {
		t.Fatalf("the holder's Complete, beside a waiting claim, with room for one call: %v", err)
	}
	if res := <-reply; res.GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED {
		t.Fatalf("waiter got %v", res.GetOutcome())
	}
	if n := g.inflight.Running(); n != 0 {
		t.Fatalf("%d slots still taken after every call ended", n)
	}
}

// completions records when the store's Complete returned: the moment the
// holder's outcome is stored and the waiters are woken (Notify wraps
// this). A test spy: it embeds the store rather than writing out each
// method.
type completions struct {
	store.Backend
	at atomic.Pointer[time.Time]
}

func (c *completions) Complete(ctx context.Context, p store.CompleteParams) (store.Record, error) {
	rec, err := c.Backend.Complete(ctx, p)
	now := time.Now()
	c.at.Store(&now)
	return rec, err
}

// BenchmarkClaimWaitWake measures how soon a waiting claim answers after
// the holder's Complete on the same server (the whole in-process path of
// BenchmarkHotPath, embedded store with group commit and replay cache):
// one holder, one waiter a key, one key per iteration. stored-* is from
// the store's Complete returning (the outcome stored) to the waiter's
// answer arriving: the wake latency. sent-* is from the holder sending
// Complete, so it adds the Complete's own commit.
//
//	go test -run '^$' -bench ClaimWaitWake -benchtime 500x ./server
func BenchmarkClaimWaitWake(b *testing.B) {
	cfg := testConfig()
	cfg.GroupCommit, cfg.ReplayCacheBytes, cfg.ReplayCacheTTL = true, 32<<20, time.Minute
	cfg.MaxInFlight, cfg.PolicyCacheTTL = 1024, 5*time.Second
	cfg.ClaimWait = claimwait.Options{MaxWait: claimwait.DefaultMaxWait, Poll: claimwait.DefaultPoll}
	spy := &completions{}
	c, g := waitingStack(b, cfg, func(st store.Backend) store.Backend { spy.Backend = st; return spy })
	ctx := context.Background()
	var sentTo, storedTo []time.Duration
	i := 0
	for b.Loop() {
		key := fmt.Sprint("k-", i)
		i++
		held, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: key, LeaseTtl: durationpb.New(time.Minute)})
		if err != nil {
			b.Fatal(err)
		}
		answered := make(chan time.Time, 1)
		go func() {
			res, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "bench", Key: key, Wait: durationpb.New(time.Minute)})
			if err != nil || res.GetOutcome() != dedupv1.Outcome_OUTCOME_COMPLETED {
				b.Errorf("waiter got %v, %v", res.GetOutcome(), err)
			}
			answered <- time.Now()
		}()
		if !untilAsleep(g.waits, 1, answered) {
			b.Fatal("the claim answered without waiting")
		}
		sent := time.Now()
		if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "bench", Key: key, FencingToken: held.GetFencingToken(), Result: []byte("r")}); err != nil {
			b.Fatal(err)
		}
		at := <-answered
		sentTo, storedTo = append(sentTo, at.Sub(sent)), append(storedTo, at.Sub(*spy.at.Load()))
	}
	report(b, "stored", storedTo)
	report(b, "sent", sentTo)
}

// report adds p50, p99 and max of ds, in milliseconds, to b's results.
func report(b *testing.B, name string, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ds[len(ds)/2]), name+"-p50-ms")
	b.ReportMetric(ms(ds[len(ds)*99/100]), name+"-p99-ms")
	b.ReportMetric(ms(ds[len(ds)-1]), name+"-max-ms")
}
