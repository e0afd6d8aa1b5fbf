package store

import (
	"context"
	"errors"
	"fmt"
)

// The errors a Store returns, matched with errors.Is. The gRPC layer maps
// each to one status code and ErrorInfo reason, in one place.
var (
	// ErrNotFound: the key has no live record.
	ErrNotFound = errors.New("no record for this key")
	// ErrDigestMismatch: the key is bound to a request with other content.
	ErrDigestMismatch = errors.New("digest differs from the digest stored for this key")
	// ErrLeaseLost: the fencing token is not the key's current one, the key
	// was released, or the record is gone.
	ErrLeaseLost = errors.New("fencing token is not the current lease of this key")
	// ErrAlreadyFinished: the key already holds a different terminal outcome.
	ErrAlreadyFinished = errors.New("key already has a different outcome")
	// ErrUnavailable: the database could not be reached, stayed too
	// contended to commit, or could not tell whether a commit happened
	// (CockroachDB's "result is ambiguous", SQLSTATE 40003). The call may be
	// retried; whether it changed anything is unknown once its write was
	// sent (see Store), so a retry reads the stored outcome.
	ErrUnavailable = errors.New("store unavailable")
	// ErrNoPolicy: the consumer has no stored policy.
	ErrNoPolicy = errors.New("no policy for this consumer")
)

// ConflictError is a refusal caused by the stored record, which it carries so
// that callers can see what they conflicted with.
type ConflictError struct {
	Err    error
	Record Record
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s (consumer %q, key %q, state %s, fencing token %d)",
		e.Err, e.Record.Consumer, e.Record.Key, e.Record.State, e.Record.FencingToken)
}

func (e *ConflictError) Unwrap() error { return e.Err }

func conflict(err error, stored *Record) error {
	return &ConflictError{Err: err, Record: *stored}
}

// Failure classes: how a store call failed, as metrics and traces name it.
const (
	FailureUnavailable = "unavailable"
	FailureDeadline    = "deadline"
	FailureCanceled    = "canceled"
	FailureInternal    = "internal"
)

// Classify names how a store call ended, for metrics and traces, without
// any of the call's data: "ok"; one of the refusals the contract defines
// ("not_found", "digest_mismatch", "lease_lost", "already_finished",
// "no_policy", "sequence_gap", "mode_mismatch", "conflict"), which are
// answers, for streams as for keys; or, with failed set, one of the
// Failure classes.
func Classify(err error) (outcome string, failed bool) {
	if err == nil {
		return "ok", false // before c, which escapes to the heap: a success allocates nothing
	}
	var (
		c  *ConflictError
		sc *StreamConflictError
	)
	switch {
	case errors.Is(err, ErrNotFound):
		return "not_found", false
	case errors.Is(err, ErrDigestMismatch):
		return "digest_mismatch", false
	case errors.Is(err, ErrLeaseLost):
		return "lease_lost", false
	case errors.Is(err, ErrAlreadyFinished):
		return "already_finished", false
	case errors.Is(err, ErrNoPolicy):
		return "no_policy", false
	case errors.Is(err, ErrSequenceGap):
		return "sequence_gap", false
	case errors.Is(err, ErrModeMismatch):
		return "mode_mismatch", false
	case errors.As(err, &c), errors.As(err, &sc):
		return "conflict", false
	case errors.Is(err, ErrUnavailable):
		return FailureUnavailable, true
	case errors.Is(err, context.DeadlineExceeded):
		return FailureDeadline, true
	case errors.Is(err, context.Canceled):
		return FailureCanceled, true
	}
	return FailureInternal, true
}
