package storetrace_test

import (
	"context"
	"slices"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetest"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

// summarised answers the two stream reads with values of their own, so a
// test can tell which reached the store.
type summarised struct{ store.Backend }

func (summarised) GetStream(context.Context, string, string) (store.Stream, error) {
	return store.Stream{Consumer: "orders", Stream: "s", HighWater: 7, Parked: 2}, nil
}

func (summarised) GetParkedSummary(context.Context, string, string) (store.ParkedSummary, error) {
	return store.ParkedSummary{Count: 2, Lowest: 9, Highest: 12, GapOpen: true}, nil
}

// TestReadStreamObservedAsItsTypedCall: the one engine ReadStream keeps
// the span names and metric labels of the two typed reads it serves, which
// dashboards read: store.GetStream and get_stream for the stream alone,
// store.GetParkedSummary and get_parked_summary when the summary is asked.
func TestReadStreamObservedAsItsTypedCall(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	var counted []string
	s := store.NewAPI(storetrace.Observe(storetest.AsEngine(summarised{}), storetrace.Options{
		Tracer:  sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)),
		Counted: func(op store.Op, class string, _ bool, _ error) { counted = append(counted, op.Label+":"+class) },
	}))
	ctx := context.Background()
	if st, err := s.GetStream(ctx, "orders", "s"); st.HighWater != 7 || err != nil {
		t.Errorf("GetStream = %+v, %v; want the stream at high water 7", st, err)
	}
	if sum, err := s.GetParkedSummary(ctx, "orders", "s"); sum.Lowest != 9 || sum.Highest != 12 || !sum.GapOpen || err != nil {
		t.Errorf("GetParkedSummary = %+v, %v; want the summary of 9..12 with its gap open", sum, err)
	}
	var names []string
	for _, span := range spans.Ended() {
		names = append(names, span.Name())
	}
	if want := []string{"store.GetStream", "store.GetParkedSummary"}; !slices.Equal(names, want) {
		t.Errorf("spans %v; want %v", names, want)
	}
	if want := []string{"get_stream:ok", "get_parked_summary:ok"}; !slices.Equal(counted, want) {
		t.Errorf("counted %v; want %v", counted, want)
	}
}
