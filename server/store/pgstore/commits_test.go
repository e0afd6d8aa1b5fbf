package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/pgstore"
)

// insertCounter counts the inserts of fresh claims that succeeded: each is
// one autocommitted statement, so one commit.
type insertCounter struct{ n atomic.Int64 }

type insertKey struct{}

func (c *insertCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, insertKey{}, strings.HasPrefix(strings.TrimSpace(data.SQL), "INSERT INTO dedup_records"))
}

func (c *insertCounter) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	if insert, _ := ctx.Value(insertKey{}).(bool); insert && data.Err == nil {
		c.n.Add(1)
	}
}

// commitSeries reads the commit metrics of the postgres store: each kind's
// histogram count and sum, and the commits counter.
func commitSeries(t *testing.T, set *commitmetrics.Set) (count map[string]uint64, sum map[string]float64, commits float64) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(set)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count, sum = map[string]uint64{}, map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["store"] != commitmetrics.StorePostgres {
				t.Errorf("%s: store label %q", f.GetName(), labels["store"])
			}
			switch f.GetName() {
			case commitmetrics.CommandsName:
				count[labels["kind"]] = m.GetHistogram().GetSampleCount()
				sum[labels["kind"]] = m.GetHistogram().GetSampleSum()
			case commitmetrics.CommitsName:
				commits = m.GetCounter().GetValue()
			}
		}
	}
	return count, sum, commits
}

// TestCommitMetrics drives N fresh claims concurrently, then their
// completes, then a ClaimBatch of fresh keys, and checks the commit metrics
// against what the test counts on its own: every claim and complete is one
// command (sum == N), each insert the database ran is one claim commit,
// and the commits counter is the histograms' counts together.
func TestCommitMetrics(t *testing.T) {
	const n, poll = 96, 100
	set := commitmetrics.New()
	var inserts insertCounter
	s, err := pgstore.OpenTraced(context.Background(), pgtest.URL(t),
		pgstore.Options{Commits: set.For(commitmetrics.StorePostgres, false)}, &inserts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	migrated(t, s)
	ctx := context.Background()
	tokens := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := s.Claim(ctx, claimParams(fmt.Sprintf("k%d", i)))
			if err != nil || res.Outcome != store.Acquired {
				t.Errorf("claim k%d: %v, %v", i, res.Outcome, err)
			}
			tokens[i] = res.Record.FencingToken
		})
	}
	wg.Wait()
	claimInserts := inserts.n.Load()
	for i := range n {
		wg.Go(func() {
			if _, err := s.Complete(ctx, completeParams(fmt.Sprintf("k%d", i), tokens[i], "ok")); err != nil {
				t.Errorf("complete k%d: %v", i, err)
			}
		})
	}
	wg.Wait()
	cmds := make([]store.Command, poll)
	for i := range cmds {
		cmds[i] = claimParams(fmt.Sprintf("p%d", i))
	}
	for i, r := range s.ApplyBatch(ctx, store.BatchParams{Commands: cmds}) {
		if r.Err != nil || r.Outcome != store.Acquired {
			t.Errorf("poll item %d: %v, %v", i, r.Outcome, r.Err)
		}
	}

	count, sum, commits := commitSeries(t, set)
	if sum["claim"] != n || count["claim"] != uint64(claimInserts) {
		t.Errorf("claim commits: count %d sum %v, want %d inserts carrying %d claims", count["claim"], sum["claim"], claimInserts, n)
	}
	if sum["finish"] != n || count["finish"] < 1 || count["finish"] > n {
		t.Errorf("finish commits: count %d sum %v, want 1..%d carrying %d", count["finish"], sum["finish"], n, n)
	}
	if count["poll"] != 1 || sum["poll"] != poll {
		t.Errorf("poll commits: count %d sum %v, want 1 carrying %d", count["poll"], sum["poll"], poll)
	}
	var all uint64
	for _, c := range count {
		all += c
	}
	if commits != float64(all) {
		t.Errorf("commits counter %v, want the histograms' counts together, %d", commits, all)
	}
	t.Logf("%d claims in %d commits, %d completes in %d", n, count["claim"], n, count["finish"])
}
