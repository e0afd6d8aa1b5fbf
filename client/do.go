package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	mrand "math/rand/v2"
	"time"
	"unicode/utf8"
)

// Attempt is what fn gets to know about the claim it runs under.
type Attempt struct {
	// FencingToken is the token of this lease. Pass it to your own write
	// and make that write conditional on it (see docs/guarantees.md), so
	// that a holder whose lease ran out cannot overwrite its successor.
	FencingToken int64
	// Number counts the acquisitions of the key: 1 on the first delivery,
	// more when an earlier attempt crashed, lost its lease or was released.
	// Above 1, an earlier attempt may have done the effect already: that
	// is when Do runs DoOptions.Settle (docs/guarantees.md, "The attempt
	// number").
	Number int64
	// Record is the key's record at the claim.
	Record *Record
}

// DoResult is the key's outcome.
type DoResult struct {
	// Result is the stored result.
	Result []byte
	// Record is the key's record after Do.
	Record *Record
	// Replayed is true when the outcome was stored by an earlier attempt
	// and fn did not run.
	Replayed bool
	// Settled is true when Settle found the effect of an earlier attempt:
	// Do completed the key with Settle's result and fn did not run.
	Settled bool
}

// DoOptions tune Do. The zero value is usable.
type DoOptions struct {
	// LeaseTTL is the lease length; the server default when zero. Choose it
	// longer than fn usually takes: Do extends it, but a stalled process
	// cannot.
	LeaseTTL time.Duration
	// Owner describes the caller in the record (a host or worker name). Do
	// appends a random suffix that makes each Do call's owner unique.
	Owner string
	// MaxWait bounds how long Do waits while another caller holds the key
	// (30s when zero; negative means do not wait at all).
	MaxWait time.Duration
	// ExtendFraction is how much of the lease may pass before Do extends
	// it: 1/3 when zero.
	ExtendFraction float64
	// Settle looks for the effect of an earlier attempt before fn runs
	// again; see SettleFunc. Without it, a takeover after a crash that
	// followed the effect runs fn twice.
	Settle SettleFunc
}

const (
	defaultMaxWait   = 30 * time.Second
	firstWaitBackoff = 50 * time.Millisecond
	maxWaitBackoff   = 2 * time.Second
	// outcomeTimeout bounds recording the outcome once fn has returned. It
	// runs even when the caller's context is done: an effect that happened
	// is worth recording.
	outcomeTimeout      = 10 * time.Second
	maxRejectionMessage = 4096
	retryableReason     = "RETRYABLE_ERROR"
)

// Do runs fn at most once per successful outcome of (consumer, key):
//
//   - it claims the key; a stored COMPLETED outcome is returned with
//     Replayed set, and a stored rejection as a *RejectedError (Replayed
//     set), both without running fn;
//   - while another caller holds the key it waits, up to MaxWait, then
//     returns an *InProgressError (ErrInProgressTimeout): each claim asks
//     the server to wait for the holder's outcome (ClaimOptions.Wait), and
//     a claim answered IN_PROGRESS before MaxWait is over (a server without
//     waiting, or past its waiter bounds) is repeated with backoff and
//     jitter, never past the holder's retry_after;
//   - once it holds the lease, and when an earlier holder may have done
//     the effect (Attempt.Number above 1), it runs opt.Settle first: an
//     effect found completes the key with Settle's result (Settled set)
//     and fn does not run;
//   - otherwise it runs fn, extending the lease while Settle and fn run,
//     and cancels their context (cause ErrLeaseLost) if the lease is lost;
//   - fn's result is stored with Complete; an error made with Terminal is
//     stored with Reject and returned as a *RejectedError; an error whose
//     outcome is unknown (see below) leaves the claim PENDING and is
//     returned as an *UnknownOutcomeError; any other error releases the
//     key (Reject, retryable) and is returned as it is.
//
// The outcome is unknown, and the claim stays PENDING until its lease runs
// out, when Settle fails, when fn's error wraps context.Canceled or
// context.DeadlineExceeded (a timeout may have let the effect through),
// or when fn returns an error after its context was done (the caller's
// cancellation or deadline, or the lease lost). If Settle or fn panics, Do
// neither completes nor releases either: like a crash. The next
// acquisition runs Settle, and so does a Reconciler.
//
// A Claim whose ACQUIRED reply was lost to a broken connection is retried
// by the client and then answers IN_PROGRESS for the caller's own lease.
// Do recognises that case by its unique owner string and carries on with
// the record's fencing token, so a lost reply costs nothing. (A caller of
// Claim itself must handle that case the same way, or wait for the lease.)
func (c *Client) Do(ctx context.Context, consumer, key string, digest []byte, opt DoOptions,
	fn func(ctx context.Context, a Attempt) ([]byte, error)) (DoResult, error) {
	owner := uniqueOwner(opt.Owner)
	claim, lease, err := c.claimOrWait(ctx, consumer, key, digest, owner, opt)
	if err != nil {
		return DoResult{}, err
	}
	switch claim.Outcome {
	case Completed:
		return DoResult{Result: claim.Record.GetResult(), Record: claim.Record, Replayed: true}, nil
	case Rejected:
		return DoResult{Record: claim.Record}, &RejectedError{
			Rejection: rejectionFromProto(claim.Record.GetRejection()), Record: claim.Record, Replayed: true}
	}
	return c.run(ctx, consumer, key, claim, lease, opt, fn)
}

// claimOrWait claims until it acquires or finds a stored outcome. It also
// returns the local time by which the acquired lease runs out.
func (c *Client) claimOrWait(ctx context.Context, consumer, key string, digest []byte, owner string,
	opt DoOptions) (ClaimResult, time.Time, error) {
	maxWait := opt.MaxWait
	if maxWait == 0 {
		maxWait = defaultMaxWait
	}
	deadline := time.Now().Add(max(maxWait, 0))
	backoff := firstWaitBackoff
	for claims := 1; ; claims++ {
		start := time.Now()
		// The server waits for what is left of MaxWait, where it can; one
		// that cannot answers IN_PROGRESS at once and the loop polls.
		r, err := c.Claim(ctx, consumer, key, digest, ClaimOptions{LeaseTTL: opt.LeaseTTL, Owner: owner, Wait: time.Until(deadline)})
		if err != nil {
			return r, time.Time{}, err
		}
		switch {
		case r.Outcome == Acquired:
			span := leaseSpan(r.Record)
			return r, leaseStart(start, time.Now(), span).Add(span), nil
		case r.Outcome == InProgress && r.Record.GetOwner() == owner:
			// Our own claim, applied before its reply was lost: the record's
			// token is ours, and its lease runs out after retry_after.
			r.Outcome, r.FencingToken = Acquired, r.Record.GetFencingToken()
			return r, start.Add(r.RetryAfter), nil
		case r.Outcome != InProgress:
			return r, time.Time{}, nil
		}
		now := time.Now()
		if !now.Before(deadline) {
			return r, time.Time{}, &InProgressError{Record: r.Record, Claims: claims}
		}
		// Poll with backoff, but never sleep past the holder's lease: once
		// it runs out the key can be taken over.
		wait := min(jitter(backoff), r.RetryAfter+time.Millisecond, deadline.Sub(now))
		backoff = min(2*backoff, maxWaitBackoff)
		if err := sleep(ctx, wait); err != nil {
			return r, time.Time{}, err
		}
	}
}

// run runs Settle and fn under the acquired lease and records the outcome.
func (c *Client) run(ctx context.Context, consumer, key string, claim ClaimResult, leaseEnd time.Time,
	opt DoOptions, fn func(ctx context.Context, a Attempt) ([]byte, error)) (DoResult, error) {
	token := claim.FencingToken
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	keeper := c.keepLease(runCtx, cancel, leaseRef{consumer: consumer, key: key, token: token, ttl: leaseSpan(claim.Record)}, opt, leaseEnd)
	step := func() attemptStep {
		defer keeper.stop()
		a := Attempt{FencingToken: token, Number: claim.Record.GetAttempts(), Record: claim.Record}
		return runAttempt(runCtx, a, retaken(opt.Settle, a), fn)
	}()
	rec := recordingOf(runCtx, step)
	if rec.pending {
		return DoResult{}, unknownOutcome(step, leaseLoss(runCtx), claim.Record)
	}
	octx, ocancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeTimeout)
	defer ocancel()
	var stored *Record
	var err error
	if rec.rejection == nil {
		stored, err = c.Complete(octx, consumer, key, token, step.result)
	} else {
		stored, err = c.Reject(octx, consumer, key, token, *rec.rejection)
	}
	return outcome(stored, err, rec.rejection, step)
}

// leaseLoss is the lease loss that cancelled ctx, or nil when it was not
// cancelled or was cancelled by the caller.
func leaseLoss(ctx context.Context) error {
	if lost := context.Cause(ctx); lost != nil && errors.Is(lost, ErrLeaseLost) {
		return lost
	}
	return nil
}

// leaseSpan is the length of a record's current lease.
func leaseSpan(r *Record) time.Duration {
	return r.GetLeaseExpiresAt().AsTime().Sub(r.GetUpdatedAt().AsTime())
}

// uniqueOwner makes the owner string of one Do call: the caller's prefix
// plus 96 random bits.
func uniqueOwner(prefix string) string {
	var b [12]byte
	rand.Read(b[:])
	return truncateUTF8(prefix, 200) + "#" + hex.EncodeToString(b[:])
}

func jitter(d time.Duration) time.Duration {
	// ±20%, so that waiters of one key do not claim in lockstep.
	return time.Duration(float64(d) * (0.8 + 0.4*mrand.Float64()))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
