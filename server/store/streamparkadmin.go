package store

import (
	"math"
	"time"
)

// The park commands besides claims and finishes: ClaimParked of one
// stream, DropParked and SkipGap, as ApplyStreamParked decides them.

// applyClaimParked never refuses: no event ready is an answer, HandedOut nil.
func applyClaimParked(stored *Stream, view ParkedView, c ClaimParkedParams, now time.Time) StreamDecision {
	if stored == nil {
		return StreamDecision{}
	}
	ev := view.at(stored.HighWater + 1)
	if ev == nil || stored.Mode != Dense || stored.LeaseLive(now) {
		return StreamDecision{Stream: *stored}
	}
	next := *stored
	d := StreamDecision{}
	handOut(&next, &d, *ev, c.Owner, c.Policy.lease(c.LeaseTTL), c.Policy, now)
	d.Stream = next
	return d
}

func applyDropParked(stored *Stream, view ParkedView, c DropParkedParams, now time.Time) (StreamDecision, error) {
	if stored == nil {
		return StreamDecision{}, ErrNotFound
	}
	to := c.To
	if to == 0 {
		to = math.MaxInt64
	}
	next := *stored
	d := StreamDecision{}
	for _, ev := range view.Events {
		if ev.Sequence >= c.From && ev.Sequence <= to {
			unpark(&next, &d, ev)
			d.Dropped++
		}
	}
	if d.Dropped > 0 {
		next.UpdatedAt = now
		d.Write = !c.DryRun
	}
	d.Stream = next
	return d, nil
}

func applySkipGap(stored *Stream, view ParkedView, c SkipGapParams, now time.Time) (StreamDecision, error) {
	if stored == nil {
		return StreamDecision{}, ErrNotFound
	}
	noGap := &StreamConflictError{Err: ErrNoGap, Stream: *stored}
	if stored.Mode != Dense || len(view.Events) == 0 || view.Events[0].Sequence <= stored.HighWater+1 {
		return StreamDecision{}, noGap
	}
	if c.Cause != SkipByAdmin {
		p := c.Policy
		due := p.OnGapTimeout == GapSkip && p.GapTimeout > 0 && !view.OldestParkedAt.IsZero() &&
			!now.Before(view.OldestParkedAt.Add(p.GapTimeout))
		if !due || stored.LeaseLive(now) {
			return StreamDecision{}, noGap
		}
	}
	low := view.Events[0].Sequence
	skipped := SkippedRange{From: stored.HighWater + 1, To: low - 1, Cause: c.Cause, At: now}
	if skipped.Cause == "" {
		skipped.Cause = SkipByGapTimeout
	}
	next := *stored
	// As for a reset: a claim in flight is dropped, and its holder (or a
	// repeat of the finish that set the old mark) is told its lease is lost.
	next.FencingToken++
	next.HighWater = low - 1
	next.LastOutcome = ""
	next.LastRejection = nil
	next.FinishedToken = 0
	next.Skipped += skipped.To - skipped.From + 1
	next.LastSkipped = &skipped
	clearClaim(&next, c.Policy, now)
	return StreamDecision{Stream: next, Write: !c.DryRun, Skipped: &skipped}, nil
}
