package store

import (
	"context"
	"errors"
)

// A Refusal is one of the errors the contract defines as an answer rather
// than a failure: the call did what the contract says and the stored state
// said no. Metrics and traces do not count it as a failure, pgstore's retry
// returns it unchanged, and the handlers answer it with its own status code
// and ErrorInfo reason.
type Refusal struct {
	// Class names the refusal in metrics and traces, without any of the
	// call's data.
	Class string
	// Err is the contract's sentinel; nil for a ConflictError or
	// StreamConflictError wrapping none of them.
	Err error
}

// refusals is the one list of the contract's refusals. The first match
// wins; it matters only for an error that wraps two of them.
var refusals = []Refusal{
	{"stream_not_found", ErrStreamNotFound},
	{"not_found", ErrNotFound},
	{"sequence_gap", ErrSequenceGap},
	{"park_full", ErrParkFull},
	{"no_gap", ErrNoGap},
	{"mode_mismatch", ErrModeMismatch},
	{"no_policy", ErrNoPolicy},
	{"digest_mismatch", ErrDigestMismatch},
	{"already_finished", ErrAlreadyFinished},
	{"lease_lost", ErrLeaseLost},
}

// conflictRefusal is a ConflictError or StreamConflictError of none of the
// listed sentinels: still an answer carrying the stored state.
var conflictRefusal = Refusal{Class: "conflict"}

// Refusals returns the contract's refusals with a sentinel, for a layer
// that maps each one (a test there holds that it maps them all).
func Refusals() []Refusal { return append([]Refusal(nil), refusals...) }

// Refused reports whether err, wrapped or not, is one of the contract's
// refusals, and which.
func Refused(err error) (Refusal, bool) {
	if err == nil {
		return Refusal{}, false
	}
	for _, r := range refusals {
		if errors.Is(err, r.Err) {
			return r, true
		}
	}
	if _, ok := errors.AsType[*ConflictError](err); ok {
		return conflictRefusal, true
	}
	if _, ok := errors.AsType[*StreamConflictError](err); ok {
		return conflictRefusal, true
	}
	return Refusal{}, false
}

// Failure classes: how a store call failed, as metrics and traces name it.
const (
	FailureUnavailable = "unavailable"
	FailureDeadline    = "deadline"
	FailureCanceled    = "canceled"
	FailureInternal    = "internal"
)

// Classify names how a store call ended, for metrics and traces, without
// any of the call's data: "ok"; a Refusal's Class, which is an answer; or,
// with failed set, one of the Failure classes.
func Classify(err error) (outcome string, failed bool) {
	if err == nil {
		return "ok", false
	}
	if r, ok := Refused(err); ok {
		return r.Class, false
	}
	switch {
	case errors.Is(err, ErrUnavailable):
		return FailureUnavailable, true
	case errors.Is(err, context.DeadlineExceeded):
		return FailureDeadline, true
	case errors.Is(err, context.Canceled):
		return FailureCanceled, true
	}
	return FailureInternal, true
}
