package claimwait

import (
	"context"
	"time"
)

// Busy is what a claim reports back to Await: whether it still found the
// key held by another caller, and for how long the holder's lease runs
// (zero: unknown).
type Busy struct {
	Held       bool
	RetryAfter time.Duration
}

const (
	// leaseSlack is how long past the holder's reported lease end a waiter
	// claims again, so that the store's clock has passed it for sure.
	leaseSlack = time.Millisecond
	// slotRetry is how soon a woken waiter that found no admission slot
	// free tries again.
	slotRetry = 5 * time.Millisecond
	// answerMargin is how long before the caller's own deadline a waiting
	// call stops waiting, so that the caller gets IN_PROGRESS rather than
	// DEADLINE_EXCEEDED.
	answerMargin = 50 * time.Millisecond
)

// Await claims again, with claim, each time one of w's keys is woken,
// the poll interval passes or the holder's lease runs out, until claim
// reports the key no longer held, wait (already clamped) has passed, or
// claim fails. Its first claim runs at once: a finish between the claim
// that found the key held and w's Watch woke nobody. Between claims the
// call's admission slot is given back; a call that finds none free when
// woken tries again shortly, and ends the wait without claiming when its
// wait is over first. The caller's context ending ends the wait at once
// with the context's error; its deadline shortens the wait so that an
// answer comes before it. What the last claim found is the caller's to
// keep (claim stores it).
func (w *Waiter) Await(ctx context.Context, wait time.Duration, claim func(context.Context) (Busy, error)) error {
	end := time.Now().Add(wait)
	if dl, ok := ctx.Deadline(); ok && dl.Add(-answerMargin).Before(end) {
		end = dl.Add(-answerMargin)
	}
	busy, err := claim(ctx)
	if err != nil || !busy.Held {
		return err
	}
	adm := admissionOf(ctx)
	timer := time.NewTimer(time.Hour) // reset before every use (Go 1.23 timers need no draining)
	defer timer.Stop()
	for {
		left := time.Until(end)
		if left <= 0 {
			return nil
		}
		nap := min(left, w.r.opts.Poll)
		if busy.RetryAfter > 0 {
			nap = min(nap, busy.RetryAfter+leaseSlack)
		}
		adm.Release()
		admitted, err := w.sleep(ctx, timer, nap, end, adm)
		if err != nil || !admitted {
			return err
		}
		if busy, err = claim(ctx); err != nil || !busy.Held {
			return err
		}
	}
}

// sleep waits for a wake of w, nap or ctx's end, then takes an admission
// slot back, trying again every slotRetry until end when none is free; it
// reports whether it got one.
func (w *Waiter) sleep(ctx context.Context, timer *time.Timer, nap time.Duration, end time.Time, adm Admission) (bool, error) {
	w.r.asleep.Add(1)
	defer w.r.asleep.Add(-1)
	for {
		timer.Reset(nap)
		select {
		case <-w.woken:
		case <-timer.C:
			if !time.Now().Before(end) {
				return false, nil // the wait is over: its answer is the last claim's
			}
		case <-ctx.Done():
			return false, ctx.Err()
		case <-w.r.stopped:
			return false, nil // the server is stopping: answer what the last claim found
		}
		if adm.Resume() {
			return true, nil
		}
		left := time.Until(end)
		if left <= 0 {
			return false, nil
		}
		nap = min(left, slotRetry)
	}
}
