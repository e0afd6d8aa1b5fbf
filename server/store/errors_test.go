package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestClassify: refusals are answers, named after the contract's errors
// even when wrapped in a ConflictError or a StreamConflictError; everything else is a failure of
// the class its cause says.
func TestClassify(t *testing.T) {
	cases := []struct {
		err     error
		outcome string
		failed  bool
	}{
		{nil, "ok", false},
		{ErrNotFound, "not_found", false},
		{&ConflictError{Err: ErrDigestMismatch}, "digest_mismatch", false},
		{&ConflictError{Err: ErrLeaseLost}, "lease_lost", false},
		{fmt.Errorf("finish: %w", ErrAlreadyFinished), "already_finished", false},
		{ErrNoPolicy, "no_policy", false},
		{&ConflictError{Err: errors.New("other")}, "conflict", false},
		{&StreamConflictError{Err: ErrSequenceGap, Expected: 3}, "sequence_gap", false},
		{&StreamConflictError{Err: ErrModeMismatch}, "mode_mismatch", false},
		{&StreamConflictError{Err: ErrDigestMismatch}, "digest_mismatch", false},
		{&StreamConflictError{Err: errors.New("other")}, "conflict", false},
		{fmt.Errorf("dial: %w", ErrUnavailable), FailureUnavailable, true},
		{fmt.Errorf("query: %w", context.DeadlineExceeded), FailureDeadline, true},
		{context.Canceled, FailureCanceled, true},
		{errors.New("bug"), FailureInternal, true},
	}
	for _, tc := range cases {
		outcome, failed := Classify(tc.err)
		if outcome != tc.outcome || failed != tc.failed {
			t.Errorf("Classify(%v) = %q, %v; want %q, %v", tc.err, outcome, failed, tc.outcome, tc.failed)
		}
	}
}
