package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Verdict is what a reconciliation check decided about one key.
type Verdict struct {
	kind      verdictKind
	result    []byte
	rejection Rejection
}

type verdictKind int

const (
	verdictComplete verdictKind = iota + 1
	verdictReject
	verdictRelease
)

// CompleteWith records that the effect happened, with this result.
func CompleteWith(result []byte) Verdict { return Verdict{kind: verdictComplete, result: result} }

// RejectWith records a terminal refusal.
func RejectWith(reason, message string, detail []byte) Verdict {
	return Verdict{kind: verdictReject, rejection: Rejection{Reason: reason, Message: message, Detail: detail}}
}

// Release gives the key up, so that the next delivery runs the work again:
// the effect did not happen.
func Release(reason, message string) Verdict {
	return Verdict{kind: verdictRelease, rejection: Rejection{Reason: reason, Message: message, Retryable: true}}
}

// Reconciler settles the claims of one consumer whose lease ran out while
// PENDING: the ones whose effect may or may not have happened.
//
// For each such record it first claims the key, taking over the expired
// lease with a new fencing token, and only then calls Check. The order
// matters: the old holder may only be stalled, not dead. Once the key is
// taken over, the old holder's Complete or Reject is refused (LEASE_LOST)
// and, if its own write is fenced by the token, so is its effect; Check
// can then look at the caller's system knowing that nobody else will change
// the answer, and should itself record the new token there (e.g. raise the
// fence row to Attempt.FencingToken) when it decides. Checking before
// taking over would race the old holder: it could do the effect just after
// Check saw it missing.
type Reconciler struct {
	Client   *Client
	Consumer string
	// Owner describes the reconciler in the records it claims.
	Owner string
	// LeaseTTL is the lease taken for each key while Check runs; the server
	// default when zero.
	LeaseTTL time.Duration
	// PageSize is passed to ListRecords; the server default when zero.
	PageSize int32
	// Settle decides one key, looking at the caller's own system: the same
	// function a consumer passes in DoOptions.Settle. Found completes the
	// key with its result, not found releases it (reason NOT_FOUND) so that
	// the next delivery runs the work, a Terminal error rejects it, and any
	// other error is Run's error. Set Settle or Check, not both.
	Settle SettleFunc
	// Check decides one key with a Verdict: the older, more general form
	// of Settle.
	Check func(ctx context.Context, a Attempt) (Verdict, error)
}

// ReconcileReport counts what one Run did.
type ReconcileReport struct {
	Completed, Rejected, Released int
	// Skipped counts keys that someone else settled or took over between
	// the listing and the claim.
	Skipped int
}

// Run settles every expired pending claim it lists once. A failed Check
// releases nothing: the key keeps the reconciler's lease until it runs
// out, and the next Run (or delivery) finds it again. Run stops at the
// first error.
func (r *Reconciler) Run(ctx context.Context) (ReconcileReport, error) {
	var report ReconcileReport
	if (r.Check == nil) == (r.Settle == nil) {
		return report, errors.New("reconcile: a Reconciler needs Settle or Check, not both")
	}
	req := &dedupv1.ListRecordsRequest{
		Consumer: r.Consumer, LeaseExpired: true, PageSize: r.PageSize,
		States: []dedupv1.State{dedupv1.State_STATE_PENDING},
	}
	for rec, err := range r.Client.Records(ctx, req) {
		if err != nil {
			return report, fmt.Errorf("reconcile: listing %s: %w", r.Consumer, err)
		}
		if err := r.settle(ctx, rec, &report); err != nil {
			return report, fmt.Errorf("reconcile: key %q: %w", rec.GetKey(), err)
		}
	}
	return report, nil
}

// decide asks Check or Settle about one key.
func (r *Reconciler) decide(ctx context.Context, a Attempt) (Verdict, error) {
	if r.Check != nil {
		return r.Check(ctx, a)
	}
	result, found, err := r.Settle(ctx, a)
	var failure *FailureError
	switch {
	case errors.As(err, &failure) && !failure.Rejection.Retryable:
		return RejectWith(failure.Rejection.Reason, truncateUTF8(failure.Rejection.Message, maxRejectionMessage),
			failure.Rejection.Detail), nil
	case err != nil:
		return Verdict{}, err
	case found:
		return CompleteWith(result), nil
	}
	return Release("NOT_FOUND", "settle found no effect of the earlier attempt"), nil
}

func (r *Reconciler) settle(ctx context.Context, listed *Record, report *ReconcileReport) error {
	claim, err := r.Client.Claim(ctx, r.Consumer, listed.GetKey(), listed.GetDigest(),
		ClaimOptions{LeaseTTL: r.LeaseTTL, Owner: r.Owner})
	if errors.Is(err, ErrDigestMismatch) {
		report.Skipped++ // the record expired and the key was claimed anew
		return nil
	}
	if err != nil {
		return err
	}
	if claim.Outcome != Acquired {
		report.Skipped++
		return nil
	}
	a := Attempt{FencingToken: claim.FencingToken, Number: claim.Record.GetAttempts(), Record: claim.Record}
	verdict, err := r.decide(ctx, a)
	if err != nil {
		return err
	}
	// A verdict counts once the server has recorded it: one refused (the
	// reconciler's own lease ran out during Check and the key was taken
	// over) is Run's error, not a settled key.
	switch verdict.kind {
	case verdictComplete:
		if _, err := r.Client.Complete(ctx, r.Consumer, listed.GetKey(), a.FencingToken, verdict.result); err != nil {
			return err
		}
		report.Completed++
	case verdictReject, verdictRelease:
		if _, err := r.Client.Reject(ctx, r.Consumer, listed.GetKey(), a.FencingToken, verdict.rejection); err != nil {
			return err
		}
		if verdict.kind == verdictReject {
			report.Rejected++
		} else {
			report.Released++
		}
	default:
		return errors.New("dedup: Check returned a zero Verdict")
	}
	return nil
}
