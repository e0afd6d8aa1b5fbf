package client

import (
	"context"
	"errors"
	"fmt"
)

// SettleFunc answers, for a key whose earlier holder may have done the
// effect, whether it did: it looks in the caller's own system (the payment
// gateway's lookup by event id, the row the effect wrote) and returns
//
//   - found true and the result to store: the effect happened, so the key
//     is completed with that result and fn does not run;
//   - found false: the effect did not happen, so fn runs (Do) or the key
//     is released for the next delivery (Reconciler);
//   - an error made with Terminal: the key is rejected for good;
//   - any other error: the outcome is still unknown, so nothing is
//     recorded: the claim stays PENDING, the error is returned (matching
//     ErrSettleFailed), and Settle runs again once the lease has run out.
//
// Do, DoBatch and Reconciler take the same SettleFunc, so one function
// serves a consumer and its reconciliation. It runs under the lease: its
// context is cancelled (cause ErrLeaseLost) if the lease is lost.
type SettleFunc func(ctx context.Context, a Attempt) (result []byte, found bool, err error)

// ErrOutcomeUnknown: Do could not tell whether the effect happened (Settle
// failed, fn timed out, was cancelled or lost its lease) and left the claim
// PENDING. The error is an *UnknownOutcomeError.
var ErrOutcomeUnknown = errors.New("dedup: outcome unknown, claim left pending")

// ErrSettleFailed: Settle returned an error that is not Terminal. The error
// is an *UnknownOutcomeError, and also matches ErrOutcomeUnknown.
var ErrSettleFailed = errors.New("dedup: settle failed")

// UnknownOutcomeError is Do leaving a claim PENDING because nobody knows
// whether the effect happened. Settle decides on the next acquisition, once
// the lease has run out; the message should be redelivered (nacked), not
// acknowledged.
type UnknownOutcomeError struct {
	// Err is Settle's or fn's error, joined with the lease loss if any.
	Err error
	// InSettle is true when Settle failed, false when fn did.
	InSettle bool
	// Record is the key's record at the claim (Do, DoBatch); its
	// lease_expires_at says when the next holder can take over.
	Record *Record
	// Stream is the stream at the claim (DoInOrder).
	Stream *Stream
}

func (e *UnknownOutcomeError) Error() string {
	where := "fn"
	if e.InSettle {
		where = "settle"
	}
	key := e.Record.GetKey()
	if e.Stream != nil {
		key = e.Stream.GetStream()
	}
	return fmt.Sprintf("dedup: outcome unknown, claim of %q left pending (%s: %v)", key, where, e.Err)
}

func (e *UnknownOutcomeError) Is(target error) bool {
	return target == ErrOutcomeUnknown || (e.InSettle && target == ErrSettleFailed)
}

func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// attemptStep is what Settle and fn did under one lease.
type attemptStep struct {
	result []byte
	err    error
	// settled: Settle found the effect (result is Settle's).
	settled bool
	// settleErr: err is Settle's.
	settleErr bool
}

// retaken is settle when an earlier holder of a may have done the effect
// (its attempt number is above 1), nil otherwise.
func retaken(settle SettleFunc, a Attempt) SettleFunc {
	if a.Number > 1 {
		return settle
	}
	return nil
}

// runAttempt runs settle, if given, then fn unless settle found the effect
// or failed.
func runAttempt(ctx context.Context, a Attempt, settle SettleFunc,
	fn func(ctx context.Context, a Attempt) ([]byte, error)) attemptStep {
	if settle != nil {
		result, found, err := settle(ctx, a)
		switch {
		case err != nil:
			return attemptStep{err: err, settleErr: true}
		case found:
			return attemptStep{result: result, settled: true}
		}
	}
	result, err := fn(ctx, a)
	return attemptStep{result: result, err: err}
}

// recording is how one attempt's outcome is stored: pending (nothing is
// written), a Complete (rejection nil) or a Reject.
type recording struct {
	pending   bool
	rejection *Rejection
}

// recordingOf decides how step is recorded; ctx is the context Settle and
// fn ran under. The rule, in order: success completes; a Terminal error
// rejects; a Settle failure, an error that may hide an effect (a timeout
// or cancellation, or any error once ctx was done) leaves the claim
// pending; any other error releases the key with a retryable Reject.
func recordingOf(ctx context.Context, step attemptStep) recording {
	if step.err == nil {
		return recording{}
	}
	var failure *FailureError
	if errors.As(step.err, &failure) && !failure.Rejection.Retryable {
		rejection := failure.Rejection
		rejection.Message = truncateUTF8(rejection.Message, maxRejectionMessage)
		return recording{rejection: &rejection}
	}
	if step.settleErr || ambiguous(ctx, step.err) {
		return recording{pending: true}
	}
	release := Rejection{Reason: retryableReason, Message: step.err.Error(), Retryable: true}
	if failure != nil {
		release.Reason = failure.Rejection.Reason
	}
	release.Message = truncateUTF8(release.Message, maxRejectionMessage)
	return recording{rejection: &release}
}

// ambiguous says whether an error from fn leaves its effect unknown: a
// timeout or cancellation may have struck after the effect was sent, and
// fn says so itself with Unknown.
func ambiguous(ctx context.Context, err error) bool {
	var marked *unknownMarkError
	return ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.As(err, &marked)
}

// unknownOutcome is Do's error for a step left pending.
func unknownOutcome(step attemptStep, lost error, claimed *Record) error {
	err := step.err
	if lost != nil {
		err = errors.Join(lost, err)
	}
	return &UnknownOutcomeError{Err: err, InSettle: step.settleErr, Record: claimed}
}

// outcome turns the answer to a recording (rec, err) into Do's result and
// error. (A lease lost while Settle or fn ran left the claim pending.)
func outcome(rec *Record, err error, rejection *Rejection, step attemptStep) (DoResult, error) {
	fnErr := step.err
	switch {
	case rejection == nil:
		if err != nil {
			return DoResult{}, err
		}
		return DoResult{Result: rec.GetResult(), Record: rec, Settled: step.settled}, nil
	case !rejection.Retryable:
		if err != nil {
			return DoResult{}, errors.Join(err, fnErr)
		}
		return DoResult{Record: rec}, &RejectedError{Rejection: rejectionFromProto(rec.GetRejection()), Record: rec, Cause: fnErr}
	}
	// A release refused with LEASE_LOST means the key is not ours any more,
	// which is all a release wanted; other failures leave the key to its
	// lease.
	if err != nil && !errors.Is(err, ErrLeaseLost) {
		return DoResult{}, errors.Join(fnErr, err)
	}
	return DoResult{}, fnErr
}
