package storetrace_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
	"github.com/dedupd/dedupd/server/store/storetest"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

// Tracing must not change an answer: the whole suite runs through the
// decorator, on the embedded store with group commit, recording every span.
func TestConformance(t *testing.T) {
	storetest.RunAll(t, func(t *testing.T) store.Backend {
		inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		spans := tracetest.NewSpanRecorder()
		s := stack.Build(inner, stack.Options{Observe: storetrace.Options{Tracer: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))}})
		t.Cleanup(func() { s.Close() })
		return s
	})
}

// TestOutcomes: a store span names how the call ended; only failures mark
// the span as an error, and then with their class, never the error's text.
func TestOutcomes(t *testing.T) {
	cases := []struct {
		err     error
		outcome string
		status  codes.Code
	}{
		{nil, "ok", codes.Unset},
		{&store.ConflictError{Err: store.ErrLeaseLost, Record: store.Record{Key: "k-secret"}}, "lease_lost", codes.Unset},
		{store.ErrNotFound, "not_found", codes.Unset},
		{fmt.Errorf("dial: %w", store.ErrUnavailable), "unavailable", codes.Error},
		{errors.New(`duplicate key "k-secret"`), "internal", codes.Error},
	}
	for _, tc := range cases {
		spans := tracetest.NewSpanRecorder()
		s := storetrace.Store(storetest.AsEngine(failing{err: tc.err}), sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
		_, _ = s.Complete(context.Background(), store.CompleteParams{Consumer: "billing", Key: "k-secret"})
		ended := spans.Ended()
		if len(ended) != 1 {
			t.Fatalf("%v: %d spans, want 1", tc.err, len(ended))
		}
		span := ended[0]
		got := map[string]string{}
		for _, a := range span.Attributes() {
			got[string(a.Key)] = a.Value.String()
		}
		if span.Name() != "store.Complete" || got["dedupd.outcome"] != tc.outcome || got["dedupd.consumer"] != "billing" || len(got) != 2 {
			t.Errorf("%v: span %s with %v; want store.Complete with consumer billing and outcome %s only", tc.err, span.Name(), got, tc.outcome)
		}
		if span.Status().Code != tc.status || tc.status == codes.Error && span.Status().Description != tc.outcome {
			t.Errorf("%v: status %v, want %v described as %q", tc.err, span.Status(), tc.status, tc.outcome)
		}
	}
}

// TestUntracedBatch: a batch none of whose callers is traced records
// nothing, and ending it is harmless.
func TestUntracedBatch(t *testing.T) {
	ctx, span := storetrace.StartBatch(context.Background(), "batch", 2,
		func(int) (context.Context, string) { return context.Background(), "c" })
	if span.IsRecording() || ctx != context.Background() {
		t.Fatal("an untraced batch got a recording span")
	}
	storetrace.EndBatch(span, 2, func(int) error { return errors.New("x") })
}

type failing struct {
	store.Backend
	err error
}

func (f failing) Complete(context.Context, store.CompleteParams) (store.Record, error) {
	return store.Record{}, f.err
}

// TestBatchSpans: a batch call is one span with its size and outcome.
func TestBatchSpans(t *testing.T) {
	s, spans := tracedSQLite(t)
	policy := store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour}
	claim := func(key string) store.Command { return store.ClaimParams{Consumer: "orders", Key: key, Policy: policy} }
	s.ApplyBatch(context.Background(), store.BatchParams{Commands: []store.Command{claim("a"), claim("b")}})
	s.LookupBatch(context.Background(), store.LookupBatchParams{Consumer: "orders", Keys: []string{"a"}})
	// The store's own group-commit span may come beside them.
	byName := map[string]map[attribute.Key]attribute.Value{}
	for _, span := range spans.Ended() {
		attrs := map[attribute.Key]attribute.Value{}
		for _, kv := range span.Attributes() {
			attrs[kv.Key] = kv.Value
		}
		byName[span.Name()] = attrs
	}
	for name, size := range map[string]int64{"store.ApplyBatch": 2, "store.LookupBatch": 1} {
		attrs, ok := byName[name]
		if !ok || attrs[storetrace.BatchSizeKey].AsInt64() != size ||
			attrs[storetrace.OutcomeKey].AsString() != "ok" || attrs[storetrace.ConsumerKey].AsString() != "orders" {
			t.Errorf("span %s: %v, want size %d, outcome ok, consumer orders", name, attrs, size)
		}
	}
}

// TestStreamSpans: the stream calls are store spans as the record calls
// are, with the consumer and the outcome; a sequence gap is a refusal, not
// a failure, and the stream's id is never an attribute.
func TestStreamSpans(t *testing.T) {
	s, spans := tracedSQLite(t)
	ctx := context.Background()
	policy := store.StreamPolicy{DefaultLeaseTTL: time.Minute, StreamTTL: time.Hour}
	claim := func(seq int64) store.ClaimStreamParams {
		return store.ClaimStreamParams{Consumer: "orders", Stream: "s-secret", Sequence: seq, Owner: "w", Policy: policy}
	}
	res, err := s.ClaimStream(ctx, claim(1))
	if err != nil {
		t.Fatal(err)
	}
	st := res.Stream
	if _, err := s.CompleteStream(ctx, store.CompleteStreamParams{Consumer: "orders", Stream: "s-secret",
		Sequence: 1, FencingToken: st.FencingToken, Policy: policy}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimStream(ctx, claim(3)); !errors.Is(err, store.ErrSequenceGap) {
		t.Fatalf("claim past the next sequence: %v, want a gap", err)
	}
	if _, err := s.ClaimStream(ctx, claim(1)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetStream(ctx, "orders", "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("GetStream of an absent stream: %v", err)
	}
	if _, err := s.ResetStream(ctx, store.ResetStreamParams{Consumer: "orders", Stream: "s-secret", HighWater: 0, Policy: policy}); err != nil {
		t.Fatal(err)
	}
	type seen struct{ name, outcome string }
	var got []seen
	for _, span := range spans.Ended() {
		attrs := map[attribute.Key]string{}
		for _, kv := range span.Attributes() {
			attrs[kv.Key] = kv.Value.String()
		}
		if !strings.HasPrefix(span.Name(), "store.") {
			continue // the store's own group-commit spans
		}
		if attrs[storetrace.ConsumerKey] != "orders" || len(attrs) != 2 || span.Status().Code != codes.Unset {
			t.Errorf("span %s: attributes %v, status %v; want consumer orders and an outcome only, no error", span.Name(), attrs, span.Status())
		}
		got = append(got, seen{span.Name(), attrs[storetrace.OutcomeKey]})
	}
	want := []seen{
		{"store.ClaimStream", "acquired"},
		{"store.CompleteStream", "ok"},
		{"store.ClaimStream", "sequence_gap"},
		{"store.ClaimStream", "duplicate"},
		{"store.GetStream", "not_found"},
		{"store.ResetStream", "ok"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("spans %v, want %v", got, want)
	}
}

// Every Engine method is observed or passed through on purpose, and
// every command is named, so a new one cannot slip past unobserved.
func TestEveryEngineMethodIsDecided(t *testing.T) {
	storetest.EngineMethodsDecided(t, map[string]string{
		"Apply": "observed as the command's op", "ApplyBatch": "one span, items counted by op",
		"ApplyStream": "observed as the command's op", "LookupBatch": "Lookup or LookupBatch",
		"ReadStream":  "traced and counted as GetStream or GetParkedSummary (ReadStreamParams.Op)",
		"ListRecords": "traced", "ListStreams": "traced", "ListParked": "traced and counted",
		"ListOpenGaps": "traced and counted", "ParkedTotals": "traced and counted",
		"Reap": "counted by kind", "Ping": "counted",
		"Close":   "passes through",
		"StatsOf": "Reports: unobserved", "Leases": "Reports: unobserved",
		"Purge":       "Reports: unobserved",
		"PutPolicyOf": "Reports: unobserved", "GetPolicyOf": "Reports: unobserved", "DeletePolicyOf": "Reports: unobserved",
		"ListPolicies": "Reports: unobserved"})
	storetest.CommandsDecided(t, func(cmd any) bool {
		var op store.Op
		switch c := cmd.(type) {
		case store.Command:
			op = c.Op()
		case store.StreamCommand:
			op = c.Op()
		}
		return op.Name != "" && slices.Contains(store.Ops(), op)
	})
}

// reaping answers each Reap with a count of its kind's own, so a test can
// tell which kind reached the store.
type reaping struct{ store.Backend }

func (reaping) DeleteExpired(context.Context, int) (int, error)        { return 3, nil }
func (reaping) DeleteExpiredStreams(context.Context, int) (int, error) { return 5, nil }

// TestReapCountedByKind: the one Reap is counted under the op of its kind,
// so the reaper's metrics keep their two labels (delete_expired and
// delete_expired_streams, which deploy/'s alerts read), and a kind the
// store does not know is refused uncounted.
func TestReapCountedByKind(t *testing.T) {
	var counted []string
	s := store.NewAPI(storetrace.Observe(storetest.AsEngine(reaping{}), storetrace.Options{
		Counted: func(op store.Op, class string, _ bool, _ error) { counted = append(counted, op.Label+":"+class) },
	}))
	ctx := context.Background()
	if n, err := s.DeleteExpired(ctx, 10); n != 3 || err != nil {
		t.Errorf("DeleteExpired = %d, %v; want 3, nil", n, err)
	}
	if n, err := s.DeleteExpiredStreams(ctx, 10); n != 5 || err != nil {
		t.Errorf("DeleteExpiredStreams = %d, %v; want 5, nil", n, err)
	}
	if n, err := s.Reap(ctx, store.StreamKind+1, 10); n != 0 || !errors.Is(err, store.ErrUnknownKind) {
		t.Errorf("Reap(unknown kind) = %d, %v; want 0, ErrUnknownKind", n, err)
	}
	if want := []string{"delete_expired:ok", "delete_expired_streams:ok"}; !slices.Equal(counted, want) {
		t.Errorf("counted %v; want %v", counted, want)
	}
}

// tracedSQLite is an embedded store traced by Store, and the recorder of
// its spans; it closes with the test.
func tracedSQLite(t *testing.T) (store.Backend, *tracetest.SpanRecorder) {
	t.Helper()
	inner, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	s := storetrace.Store(inner, sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	t.Cleanup(func() { s.Close() })
	return s, spans
}
