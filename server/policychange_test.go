package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestGapPolicyChangeReachesTheGapWatchAtOnce: a stream policy changed
// through StreamAdminService (HOLD to SKIP) is what the gap watch applies
// from its next pass, although --policy-cache-ttl is an hour. Before the
// policy resolvers were shared, the gap watch kept its own and went on
// holding the gap for the hour. The oracle is counted: the first pass
// that starts after the change answers, so two whole passes after it the
// gap must have been skipped.
func TestGapPolicyChangeReachesTheGapWatchAtOnce(t *testing.T) {
	cfg := testConfig()
	cfg.PolicyCacheTTL = time.Hour
	cfg.ReapInterval = 20 * time.Millisecond
	cfg.MetricsListen = "127.0.0.1:0"
	addr, metricsAddr := dedupdproc.ParseReadyFile(runServerReady(t, cfg))
	conn := dialServer(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), answerDeadline)
	defer cancel()
	streams, admin := dedupv1.NewStreamServiceClient(conn), dedupv1.NewStreamAdminServiceClient(conn)

	setGapPolicy := func(action dedupv1.GapTimeoutAction) {
		t.Helper()
		_, err := admin.SetStreamPolicy(ctx, &dedupv1.SetStreamPolicyRequest{Policy: &dedupv1.StreamPolicy{
			Consumer: "orders", GapTimeout: durationpb.New(time.Second), OnGapTimeout: action}})
		if err != nil {
			t.Fatalf("SetStreamPolicy %v: %v", action, err)
		}
	}
	setGapPolicy(dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_HOLD)
	for _, seq := range []int64{3, 4} { // 1 and 2 missing: a gap, with no lease live
		r, err := streams.ClaimStream(ctx, &dedupv1.ClaimStreamRequest{Consumer: "orders", Stream: "s", Sequence: seq,
			Park: true, Payload: []byte("event")})
		if err != nil || r.GetOutcome() != dedupv1.StreamOutcome_STREAM_OUTCOME_PARKED {
			t.Fatalf("park %d: %v, %v", seq, r, err)
		}
	}

	// The gap watch holds the gap once it is a second old: it has resolved
	// (and, with the old code, cached for an hour) the HOLD policy.
	scrape := func() map[string]*dto.MetricFamily { return scrapeMetrics(t, metricsAddr) }
	for counter(scrape(), "dedupd_stream_gap_timeouts_total", "action", "hold") < 1 {
		waitABit(ctx, t)
	}
	setGapPolicy(dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_SKIP)
	passes := counter(scrape(), "dedupd_reaper_passes_total", "result", "ok")
	for counter(scrape(), "dedupd_reaper_passes_total", "result", "ok") < passes+2 {
		waitABit(ctx, t)
	}

	got := scrape()
	if n := counter(got, "dedupd_stream_gap_timeouts_total", "action", "skip"); n != 1 {
		t.Errorf("gap timeouts acted on by SKIP after the change: %v, want 1", n)
	}
	s, err := streams.GetStream(ctx, &dedupv1.GetStreamRequest{Consumer: "orders", Stream: "s"})
	if err != nil || s.GetStream().GetHighWater() != 2 {
		t.Fatalf("stream after two passes under SKIP: %v, %v; want the gap 1-2 skipped (high water 2)", s, err)
	}
}

// waitABit sleeps briefly between two looks at the server, and fails the
// test if its calls' deadline has passed meanwhile (a hung server).
func waitABit(ctx context.Context, t *testing.T) {
	t.Helper()
	select {
	case <-ctx.Done():
		t.Fatalf("gave up waiting: %v", ctx.Err())
	case <-time.After(10 * time.Millisecond):
	}
}

// scrapeMetrics fetches and parses the server's /metrics.
func scrapeMetrics(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing /metrics: %v", err)
	}
	return families
}

// counter is the value of family's counter whose label is value; zero
// when there is none yet.
func counter(families map[string]*dto.MetricFamily, family, label, value string) float64 {
	for _, m := range families[family].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}
