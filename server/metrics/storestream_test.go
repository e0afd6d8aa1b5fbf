package metrics

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/storetest"
)

// streamFailing fails every stream call of the hot path with err.
type streamFailing struct {
	store.Backend
	err error
}

func (f streamFailing) ClaimStream(context.Context, store.ClaimStreamParams) (store.StreamClaimResult, error) {
	return store.StreamClaimResult{}, f.err
}

func (f streamFailing) CompleteStream(context.Context, store.CompleteStreamParams) (store.StreamFinishResult, error) {
	return store.StreamFinishResult{}, f.err
}

func (f streamFailing) RejectStream(context.Context, store.RejectStreamParams) (store.StreamFinishResult, error) {
	return store.StreamFinishResult{}, f.err
}

func (f streamFailing) ClaimParked(context.Context, store.ClaimParkedParams) (store.ParkedClaimResult, error) {
	return store.ParkedClaimResult{}, f.err
}

func (f streamFailing) ListParked(context.Context, store.ListParkedParams) ([]store.ParkedEvent, error) {
	return nil, f.err
}

func (f streamFailing) GetParkedSummary(context.Context, string, string) (store.ParkedSummary, error) {
	return store.ParkedSummary{}, f.err
}

func (f streamFailing) ListOpenGaps(context.Context, store.ListOpenGapsParams) ([]store.OpenGap, error) {
	return nil, f.err
}

func (f streamFailing) ParkedTotals(context.Context) ([]store.ConsumerParked, error) {
	return nil, f.err
}

func (f streamFailing) DropParked(context.Context, store.DropParkedParams) (store.DropParkedResult, error) {
	return store.DropParkedResult{}, f.err
}

func (f streamFailing) SkipGap(context.Context, store.SkipGapParams) (store.SkipGapResult, error) {
	return store.SkipGapResult{}, f.err
}

func (f streamFailing) ReleaseStream(context.Context, store.ReleaseStreamParams) (store.Stream, error) {
	return store.Stream{}, f.err
}

func (f streamFailing) ExtendStreamLease(context.Context, store.ExtendStreamLeaseParams) (store.Stream, error) {
	return store.Stream{}, f.err
}

func (f streamFailing) GetStream(context.Context, string, string) (store.Stream, error) {
	return store.Stream{}, f.err
}

func (f streamFailing) DeleteExpiredStreams(context.Context, int) (int, error) { return 0, f.err }

// streamCalls makes each observed stream call once, by the op label it
// must be counted under.
var streamCalls = map[string]func(ctx context.Context, s store.Backend) error{
	"claim_stream": func(ctx context.Context, s store.Backend) error {
		_, err := s.ClaimStream(ctx, store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 1})
		return err
	},
	"complete_stream": func(ctx context.Context, s store.Backend) error {
		_, err := s.CompleteStream(ctx, store.CompleteStreamParams{Consumer: "c", Stream: "s"})
		return err
	},
	"reject_stream": func(ctx context.Context, s store.Backend) error {
		_, err := s.RejectStream(ctx, store.RejectStreamParams{Consumer: "c", Stream: "s"})
		return err
	},
	"release_stream": func(ctx context.Context, s store.Backend) error {
		_, err := s.ReleaseStream(ctx, store.ReleaseStreamParams{Consumer: "c", Stream: "s"})
		return err
	},
	"extend_stream_lease": func(ctx context.Context, s store.Backend) error {
		_, err := s.ExtendStreamLease(ctx, store.ExtendStreamLeaseParams{Consumer: "c", Stream: "s"})
		return err
	},
	"get_stream": func(ctx context.Context, s store.Backend) error {
		_, err := s.GetStream(ctx, "c", "s")
		return err
	},
	"delete_expired_streams": func(ctx context.Context, s store.Backend) error {
		_, err := s.DeleteExpiredStreams(ctx, 10)
		return err
	},
	"claim_parked": func(ctx context.Context, s store.Backend) error {
		_, err := s.ClaimParked(ctx, store.ClaimParkedParams{Consumer: "c"})
		return err
	},
	"list_parked": func(ctx context.Context, s store.Backend) error {
		_, err := s.ListParked(ctx, store.ListParkedParams{Consumer: "c", Stream: "s", Limit: 1})
		return err
	},
	"get_parked_summary": func(ctx context.Context, s store.Backend) error {
		_, err := s.GetParkedSummary(ctx, "c", "s")
		return err
	},
	"list_open_gaps": func(ctx context.Context, s store.Backend) error {
		_, err := s.ListOpenGaps(ctx, store.ListOpenGapsParams{Limit: 1})
		return err
	},
	"parked_totals": func(ctx context.Context, s store.Backend) error {
		_, err := s.ParkedTotals(ctx)
		return err
	},
	"drop_parked": func(ctx context.Context, s store.Backend) error {
		_, err := s.DropParked(ctx, store.DropParkedParams{Consumer: "c", Stream: "s"})
		return err
	},
	"skip_gap": func(ctx context.Context, s store.Backend) error {
		_, err := s.SkipGap(ctx, store.SkipGapParams{Consumer: "c", Stream: "s"})
		return err
	},
}

// TestObservedStreamCalls: every stream call of the hot path and the
// reaper is counted in dedupd_store_errors_total under its own op when it
// fails, and not at all when the store refuses it (a sequence gap, a mode
// mismatch, a lost lease, an absent stream are answers).
func TestObservedStreamCalls(t *testing.T) {
	if len(streamCalls) != 14 {
		t.Fatalf("%d stream calls, want the 7 of the hot path and the reaper and park mode's 7", len(streamCalls))
	}
	failures := []struct {
		err   error
		class string
	}{
		{fmt.Errorf("dial: %w", store.ErrUnavailable), store.FailureUnavailable},
		{context.DeadlineExceeded, store.FailureDeadline},
	}
	refusals := []error{
		&store.StreamConflictError{Err: store.ErrSequenceGap, Expected: 2},
		&store.StreamConflictError{Err: store.ErrModeMismatch},
		&store.StreamConflictError{Err: store.ErrDigestMismatch},
		store.ErrLeaseLost,
		store.ErrAlreadyFinished,
		store.ErrNotFound,
		&store.StreamConflictError{Err: store.ErrParkFull},
		&store.StreamConflictError{Err: store.ErrNoGap},
	}
	for op, call := range streamCalls {
		for _, f := range failures {
			m := New()
			if err := call(context.Background(), m.ObserveStore(storetest.AsEngine(streamFailing{err: f.err}))); err != f.err {
				t.Fatalf("%s: the decorator changed the error %v to %v", op, f.err, err)
			}
			if total, got := sumOf(t, m, "dedupd_store_errors_total"),
				testutil.ToFloat64(m.storeErrors.WithLabelValues(op, f.class)); total != 1 || got != 1 {
				t.Errorf("%s failing with %v: %v errors counted, %v under op=%s class=%s; want 1 and 1",
					op, f.err, total, got, op, f.class)
			}
		}
		for _, refusal := range refusals {
			m := New()
			_ = call(context.Background(), m.ObserveStore(storetest.AsEngine(streamFailing{err: refusal})))
			if total := sumOf(t, m, "dedupd_store_errors_total"); total != 0 {
				t.Errorf("%s refused with %v: %v errors counted, want 0", op, refusal, total)
			}
		}
	}
}
