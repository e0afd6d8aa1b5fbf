package client

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// heldEvent is one stream event held under a lease: the delivered event
// of DoInOrder, or a parked one handed back.
type heldEvent struct {
	stream     string
	seq, token int64
	// at is the stream as the acquisition left it (its lease fields give
	// the lease's length).
	at *Stream
	// leaseEnd is when the lease runs out, by the local clock.
	leaseEnd time.Time
}

// releasedHandler runs the parked events handed back: fn (nil when the
// caller has none) and settle, each under a lease of leaseTTL.
type releasedHandler struct {
	fn       ParkedFunc
	settle   ParkedSettleFunc
	leaseTTL time.Duration
}

// errNoReleasedHandler: a completion handed a parked event back to a
// DoInOrder without Park, which has nothing to run it on.
var errNoReleasedHandler = errors.New("dedup: a parked event was handed back to DoInOrder without Park; released for DoParked")

// runInOrder runs DoInOrder's Settle and fn on the acquired event h,
// records the outcome, and then runs the parked events that come back.
func (c *Client) runInOrder(ctx context.Context, consumer string, h heldEvent, opt InOrderOptions,
	fn func(ctx context.Context, token int64) error) (InOrderResult, error) {
	token := h.token
	step, rec, lost := c.runHeld(ctx, consumer, h, opt.LeaseTTL, settleStream(opt.Settle),
		func(ctx context.Context, _ Attempt) ([]byte, error) { return nil, fn(ctx, token) })
	if rec.pending {
		err := step.err
		if lost != nil {
			err = errors.Join(lost, err)
		}
		return InOrderResult{Stream: h.at}, &UnknownOutcomeError{Err: err, InSettle: step.settleErr, Stream: h.at}
	}
	st, next, sent, err := c.finishHeld(ctx, consumer, h, rec, opt.LeaseTTL)
	var rejected error
	switch {
	case err != nil && rec.rejection != nil && !rec.rejection.Retryable:
		return InOrderResult{Stream: st}, errors.Join(err, step.err)
	case err != nil && rec.rejection != nil:
		return InOrderResult{}, errors.Join(step.err, err)
	case err != nil:
		return InOrderResult{Stream: st}, err
	case rec.rejection != nil && rec.rejection.Retryable:
		return InOrderResult{}, step.err
	case rec.rejection != nil:
		rejected = &RejectedError{Rejection: *rec.rejection, Cause: step.err}
	}
	res := InOrderResult{Stream: st}
	if next != nil {
		res.ReleasedChain, res.Stream = c.runReleased(ctx, consumer, st, next,
			sent.Add(streamLeaseSpan(st, opt.LeaseTTL)),
			releasedHandler{fn: opt.Released, settle: opt.SettleReleased, leaseTTL: opt.LeaseTTL})
	}
	return res, rejected
}

// runReleased runs the handler on the parked event ev (acquired, with
// the stream st and a lease until leaseEnd) and on each one its finish
// hands back, until none comes or one cannot be finished; it returns the
// chain and the stream after it.
func (c *Client) runReleased(ctx context.Context, consumer string, st *Stream, ev *ParkedEvent,
	leaseEnd time.Time, h releasedHandler) (ReleasedChain, *Stream) {
	var chain ReleasedChain
	for ev != nil {
		held := heldEvent{stream: ev.GetStream(), seq: ev.GetSequence(), token: ev.GetFencingToken(), at: st, leaseEnd: leaseEnd}
		if held.stream == "" {
			held.stream = st.GetStream()
		}
		if h.fn == nil || ctx.Err() != nil {
			// Nothing to run it on, or the caller is gone: hand it to
			// DoParked at once rather than after its lease.
			why := errNoReleasedHandler
			if h.fn != nil {
				why = ctx.Err()
			}
			return c.leaveReleased(ctx, consumer, chain, held, ev, why), st
		}
		settle, fn := parkedSettle(h.settle, ev), func(ctx context.Context, _ Attempt) ([]byte, error) { return nil, h.fn(ctx, ev) }
		step, rec, lost := c.runHeld(ctx, consumer, held, h.leaseTTL, settle, fn)
		if rec.pending {
			err := step.err
			if lost != nil {
				err = errors.Join(lost, err)
			}
			chain.Unfinished, chain.UnfinishedErr = ev, &UnknownOutcomeError{Err: err, InSettle: step.settleErr, Stream: st}
			return chain, st
		}
		after, next, sent, err := c.finishHeld(ctx, consumer, held, rec, h.leaseTTL)
		switch {
		case err != nil:
			chain.Unfinished, chain.UnfinishedErr = ev, errors.Join(step.err, err)
			return chain, st
		case rec.rejection != nil && rec.rejection.Retryable:
			chain.Unfinished, chain.UnfinishedErr = ev, step.err
			return chain, after
		case rec.rejection != nil:
			chain.Rejected = append(chain.Rejected, held.seq)
		}
		chain.Released = append(chain.Released, held.seq)
		st, ev, leaseEnd = after, next, sent.Add(streamLeaseSpan(after, h.leaseTTL))
	}
	return chain, st
}

// leaveReleased releases a parked event it will not run, so that DoParked
// can take it at once, and records it as the chain's unfinished one.
func (c *Client) leaveReleased(ctx context.Context, consumer string, chain ReleasedChain, h heldEvent,
	ev *ParkedEvent, why error) ReleasedChain {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeTimeout)
	defer cancel()
	if _, err := c.ReleaseStream(rctx, consumer, h.stream, h.seq, h.token); err != nil {
		why = errors.Join(why, fmt.Errorf("releasing it (it waits for its lease): %w", err))
	}
	chain.Unfinished, chain.UnfinishedErr = ev, why
	return chain
}

// parkedSettle adapts a ParkedSettleFunc for ev to runAttempt, which runs
// it on every acquisition.
func parkedSettle(settle ParkedSettleFunc, ev *ParkedEvent) SettleFunc {
	if settle == nil {
		return nil
	}
	return func(ctx context.Context, _ Attempt) ([]byte, bool, error) {
		found, err := settle(ctx, ev)
		return nil, found, err
	}
}

// runHeld runs settle, then fn, under h's lease, extending it every third
// of its length; their context is cancelled (cause ErrLeaseLost) if the
// lease is lost, which is then returned too.
func (c *Client) runHeld(ctx context.Context, consumer string, h heldEvent, leaseTTL time.Duration, settle SettleFunc,
	fn func(ctx context.Context, a Attempt) ([]byte, error)) (attemptStep, recording, error) {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	ref := leaseRef{consumer: consumer, key: h.stream, token: h.token, ttl: streamLeaseSpan(h.at, leaseTTL), seq: h.seq}
	keeper := c.keepLease(runCtx, cancel, ref, DoOptions{LeaseTTL: leaseTTL}, h.leaseEnd)
	step := func() attemptStep {
		defer keeper.stop()
		return runAttempt(runCtx, Attempt{FencingToken: h.token}, settle, fn)
	}()
	return step, recordingOf(runCtx, step), leaseLoss(runCtx)
}

// finishHeld records rec (not pending) for h: CompleteStream or
// RejectStream, which may hand back the next parked event (acquired with
// a lease of nextLease, from about the returned time on), or
// ReleaseStream. The outcome is recorded even if the caller's context
// ended: an effect that happened is worth recording.
func (c *Client) finishHeld(ctx context.Context, consumer string, h heldEvent, rec recording,
	nextLease time.Duration) (*Stream, *ParkedEvent, time.Time, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeTimeout)
	defer cancel()
	sent := time.Now()
	switch {
	case rec.rejection == nil:
		st, next, err := c.CompleteStreamNext(rctx, consumer, h.stream, h.seq, h.token, nextLease)
		return st, next, sent, err
	case !rec.rejection.Retryable:
		st, next, err := c.RejectStreamNext(rctx, consumer, h.stream, h.seq, h.token, *rec.rejection, nextLease)
		return st, next, sent, err
	}
	st, err := c.ReleaseStream(rctx, consumer, h.stream, h.seq, h.token)
	return st, nil, sent, err
}
