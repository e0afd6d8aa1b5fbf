package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// leaseRef names one lease: of a key, or of a stream's sequence seq (key
// is then the stream).
type leaseRef struct {
	consumer, key string
	token         int64
	ttl           time.Duration
	seq           int64
}

// extend pushes the lease out by ttl (the server default when zero).
func (c *Client) extend(ctx context.Context, ref leaseRef, ttl time.Duration) error {
	if ref.seq > 0 {
		_, err := c.ExtendStreamLease(ctx, ref.consumer, ref.key, ref.seq, ref.token, ttl)
		return err
	}
	_, err := c.ExtendLease(ctx, ref.consumer, ref.key, ref.token, ttl)
	return err
}

// leaseKeeper extends a lease while fn runs.
type leaseKeeper struct {
	quit chan struct{}
	done chan struct{}
}

// keepLease extends the lease every ExtendFraction of its length and calls
// cancel with a cause matching ErrLeaseLost when the server says the lease
// is gone, or when the lease ran out locally before an extension got
// through (the server may not have said so yet, but another caller may
// already hold the key).
func (c *Client) keepLease(ctx context.Context, cancel context.CancelCauseFunc, ref leaseRef,
	opt DoOptions, leaseEnd time.Time) *leaseKeeper {
	k := &leaseKeeper{quit: make(chan struct{}), done: make(chan struct{})}
	fraction := opt.ExtendFraction
	if fraction <= 0 || fraction >= 1 {
		fraction = 1.0 / 3
	}
	// ttl is the lease length as the claim's record showed it (the server
	// default when opt.LeaseTTL is unset); extensions ask for opt.LeaseTTL,
	// zero meaning that same default.
	ttl := ref.ttl
	every := max(time.Duration(float64(ttl)*fraction), time.Millisecond)
	go func() {
		defer close(k.done)
		next := min(every, time.Until(leaseEnd)/2)
		for {
			select {
			case <-k.quit:
				return
			case <-ctx.Done():
				return
			case <-time.After(next):
			}
			start := time.Now()
			callCtx, callCancel := context.WithDeadline(ctx, leaseEnd)
			err := c.extend(callCtx, ref, opt.LeaseTTL)
			callCancel()
			switch {
			case err == nil:
				leaseEnd, next = start.Add(ttl), every
			case errors.Is(err, ErrLeaseLost), errors.Is(err, ErrAlreadyFinished), errors.Is(err, ErrNotFound),
				errors.Is(err, ErrStreamNotFound):
				cancel(fmt.Errorf("%w: %w", ErrLeaseLost, err))
				return
			case ctx.Err() != nil:
				return
			case !time.Now().Before(leaseEnd):
				cancel(fmt.Errorf("%w: the lease ran out while it could not be extended: %w", ErrLeaseLost, err))
				return
			default:
				// Transient: try again soon, well before the lease runs out.
				next = max(min(every/4, time.Until(leaseEnd)/2), time.Millisecond)
			}
		}
	}()
	return k
}

// stop ends the keeper and waits for it, so that no extension is in flight
// when the outcome is recorded.
func (k *leaseKeeper) stop() {
	close(k.quit)
	<-k.done
}

// leaseStart is the local time an acquired lease of span is counted from,
// for a claim sent at sent and answered at answered. The server started
// the lease between the two: counting from sent errs on the safe side,
// early, by the call's own time, which is right for a call that does not
// wait. A claim that waited for a holder's outcome (ClaimOptions.Wait) was
// acquired at the end of its wait, just before its answer, so counting
// from sent would leave it too little of its lease, or none. The lease is
// then counted from the answer less a tenth of the span: still early for
// any answer that took less than a tenth of the lease to arrive.
func leaseStart(sent, answered time.Time, span time.Duration) time.Time {
	if early := answered.Add(-span / 10); early.After(sent) {
		return early
	}
	return sent
}
