package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestClassify: every refusal the contract defines is an answer, named
// after its sentinel, bare, wrapped with %w, or inside a conflict error;
// everything else is a failure of the class its cause says, and an error
// the contract does not know is an internal failure. The expected classes
// are written out by hand, not read from the table under test.
func TestClassify(t *testing.T) {
	stream := Stream{Consumer: "c", Stream: "s", Mode: Dense}
	cases := []struct {
		name    string
		err     error
		outcome string
		failed  bool
	}{
		{"success", nil, "ok", false},
		{"not found", ErrNotFound, "not_found", false},
		{"not found wrapped", fmt.Errorf("lookup: %w", ErrNotFound), "not_found", false},
		{"stream not found", ErrStreamNotFound, "stream_not_found", false},
		{"stream not found wrapped", fmt.Errorf("stream %q: %w", "s", ErrStreamNotFound), "stream_not_found", false},
		{"digest mismatch", ErrDigestMismatch, "digest_mismatch", false},
		{"digest mismatch in a conflict", &ConflictError{Err: ErrDigestMismatch}, "digest_mismatch", false},
		{"lease lost", ErrLeaseLost, "lease_lost", false},
		{"lease lost in a conflict", &ConflictError{Err: ErrLeaseLost}, "lease_lost", false},
		{"already finished", ErrAlreadyFinished, "already_finished", false},
		{"already finished wrapped", fmt.Errorf("finish: %w", ErrAlreadyFinished), "already_finished", false},
		{"no policy", ErrNoPolicy, "no_policy", false},
		{"no policy wrapped", fmt.Errorf("get: %w", ErrNoPolicy), "no_policy", false},
		{"sequence gap", ErrSequenceGap, "sequence_gap", false},
		{"sequence gap in a stream conflict", &StreamConflictError{Err: ErrSequenceGap, Stream: stream, Expected: 3}, "sequence_gap", false},
		{"sequence gap wrapped twice", fmt.Errorf("claim: %w", &StreamConflictError{Err: ErrSequenceGap, Stream: stream}), "sequence_gap", false},
		{"mode mismatch", ErrModeMismatch, "mode_mismatch", false},
		{"mode mismatch in a stream conflict", &StreamConflictError{Err: ErrModeMismatch, Stream: stream}, "mode_mismatch", false},
		{"digest mismatch in a stream conflict", &StreamConflictError{Err: ErrDigestMismatch, Stream: stream}, "digest_mismatch", false},
		{"conflict of no listed sentinel", &ConflictError{Err: errors.New("other")}, "conflict", false},
		{"stream conflict of no listed sentinel", &StreamConflictError{Err: errors.New("other"), Stream: stream}, "conflict", false},
		{"unavailable", fmt.Errorf("dial: %w", ErrUnavailable), FailureUnavailable, true},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), FailureDeadline, true},
		{"canceled", context.Canceled, FailureCanceled, true},
		{"unknown", errors.New("bug"), FailureInternal, true},
		{"unknown wrapped", fmt.Errorf("pgstore: claim: %w", errors.New("syntax error")), FailureInternal, true},
	}
	for _, tc := range cases {
		outcome, failed := Classify(tc.err)
		if outcome != tc.outcome || failed != tc.failed {
			t.Errorf("%s: Classify(%v) = %q, %v; want %q, %v", tc.name, tc.err, outcome, failed, tc.outcome, tc.failed)
		}
		if _, refused := Refused(tc.err); refused == tc.failed && tc.err != nil {
			t.Errorf("%s: Refused(%v) = %v, want %v", tc.name, tc.err, refused, !tc.failed)
		}
	}
}

// TestRefusalsListEverySentinel: the refusals a mapping layer iterates are
// exactly the contract's sentinels, each once.
func TestRefusalsListEverySentinel(t *testing.T) {
	want := []error{ErrNotFound, ErrStreamNotFound, ErrDigestMismatch, ErrLeaseLost, ErrAlreadyFinished,
		ErrNoPolicy, ErrSequenceGap, ErrModeMismatch, ErrParkFull, ErrNoGap}
	got := map[error]int{}
	for _, r := range Refusals() {
		got[r.Err]++
	}
	for _, err := range want {
		if got[err] != 1 {
			t.Errorf("Refusals lists %v %d times, want once", err, got[err])
		}
	}
	if len(got) != len(want) {
		t.Errorf("Refusals lists %d sentinels, want %d", len(got), len(want))
	}
}
