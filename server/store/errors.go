package store

import (
	"errors"
	"fmt"
)

// The errors a Store returns, matched with errors.Is. Which of them are
// refusals (answers, not failures) is said once, in classify.go; the gRPC
// layer maps each refusal to one status code and ErrorInfo reason.
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
	// ErrStreamNotFound: the stream has no live record. A StreamStore
	// reports a missing stream as ErrNotFound, as it does a missing key;
	// the stream handlers answer with this one so that the caller can tell
	// the two apart.
	ErrStreamNotFound = errors.New("no live stream")
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
