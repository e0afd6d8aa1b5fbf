package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

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
	metric := func(series string) float64 { return seriesValue(t, metricsAddr, series) }
	for metric(`dedupd_stream_gap_timeouts_total{action="hold"}`) < 1 {
		waitABit(ctx, t)
	}
	setGapPolicy(dedupv1.GapTimeoutAction_GAP_TIMEOUT_ACTION_SKIP)
	passes := metric(`dedupd_reaper_passes_total{result="ok"}`)
	for metric(`dedupd_reaper_passes_total{result="ok"}`) < passes+2 {
		waitABit(ctx, t)
	}

	if n := metric(`dedupd_stream_gap_timeouts_total{action="skip"}`); n != 1 {
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

// seriesValue reads one series, named as the text exposition writes it
// (name{label="value"}), from the server's /metrics; zero when it is not
// there yet.
func seriesValue(t *testing.T, addr, series string) float64 {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(do(t, req).body)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	return 0
}
