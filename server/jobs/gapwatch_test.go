package jobs

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// TestGapWatch: a reaper pass skips the open gap of a consumer whose policy
// says SKIP once its gap_timeout has passed, holds (and counts once) the
// gap of a consumer whose policy says HOLD, leaves a gap not yet due, and
// sets the parked gauges.
func TestGapWatch(t *testing.T) {
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for consumer, p := range map[string]store.ConsumerStreamPolicy{
		"skipper": {GapTimeout: time.Millisecond, OnGapTimeout: store.GapSkip},
		"holder":  {GapTimeout: time.Millisecond, OnGapTimeout: store.GapHold},
		"patient": {GapTimeout: time.Hour, OnGapTimeout: store.GapSkip},
	} {
		p.Consumer = consumer
		if _, err := st.PutStreamPolicy(ctx, p); err != nil {
			t.Fatal(err)
		}
		for _, seq := range []int64{3, 4} {
			res, err := st.ClaimStream(ctx, store.ClaimStreamParams{Consumer: consumer, Stream: "s", Sequence: seq, Park: true,
				Payload: []byte("12345"), Policy: store.StreamPolicy{DefaultLeaseTTL: time.Minute, StreamTTL: time.Hour}})
			if err != nil || res.Outcome != store.StreamParked {
				t.Fatalf("park %s %d: %v, %v", consumer, seq, res.Outcome, err)
			}
		}
	}
	time.Sleep(5 * time.Millisecond)
	defaults := policy.Defaults{Policy: store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}}
	m := metrics.New()
	observed := m.ObserveStore(st) // as RunReaper is given it: skips are counted there
	g := newGapWatch(observed, policy.NewResolvers(observed, defaults, 0, 0).Streams, m)
	for pass := range 2 {
		skipped, err := g.pass(ctx)
		if want := 1 - pass; err != nil || skipped != want {
			t.Fatalf("pass %d skipped %d, %v; want %d", pass, skipped, err, want)
		}
	}
	marks := map[string]int64{"skipper": 2, "holder": 0, "patient": 0}
	for consumer, want := range marks {
		s, err := st.GetStream(ctx, consumer, "s")
		if err != nil || s.HighWater != want || s.Parked != 2 {
			t.Errorf("%s: %+v, %v; want mark %d with 2 parked", consumer, s, err, want)
		}
	}
	got := gathered(t, m)
	for series, want := range map[string]float64{
		`dedupd_stream_gap_timeouts_total{action="skip"}`:            1,
		`dedupd_stream_gap_timeouts_total{action="hold"}`:            1, // two passes, one gap
		`dedupd_stream_skips_total{cause="gap_timeout"}`:             1,
		`dedupd_stream_skipped_sequences_total{cause="gap_timeout"}`: 2,
		`dedupd_stream_parked_events{consumer="holder"}`:             2,
		`dedupd_stream_parked_bytes{consumer="skipper"}`:             10,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
	if _, open := got[`dedupd_stream_oldest_open_gap_seconds{consumer="skipper"}`]; open {
		t.Error("the skipped gap still shows as open")
	}
	if got[`dedupd_stream_oldest_open_gap_seconds{consumer="holder"}`] <= 0 {
		t.Error("the held gap's age is not exported")
	}
}

// gathered flattens m's counters and gauges to "name{label="value"}".
func gathered(t *testing.T, m *metrics.Metrics) map[string]float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		for _, s := range f.GetMetric() {
			name := f.GetName()
			for i, l := range s.GetLabel() {
				sep := ","
				if i == 0 {
					sep = "{"
				}
				name += sep + l.GetName() + `="` + l.GetValue() + `"`
			}
			if len(s.GetLabel()) > 0 {
				name += "}"
			}
			out[name] = value(s)
		}
	}
	return out
}

func value(s *dto.Metric) float64 {
	if c := s.GetCounter(); c != nil {
		return c.GetValue()
	}
	return s.GetGauge().GetValue()
}
