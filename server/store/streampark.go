package store

import (
	"bytes"
	"errors"
	"math"
	"time"
)

// ParkedRead names the parked events of one stream that a command needs
// read before ApplyStreamParked can decide it: those with From <= sequence
// <= To (none when To < From), ascending, at most Limit of them (0: all).
type ParkedRead struct {
	From, To int64
	Limit    int
	// Payloads: read the events' payloads too (only for an event the
	// command may hand out); otherwise Payload stays nil.
	Payloads bool
	// ConsumerBytes: sum the payload bytes of every parked event of the
	// consumer (for a park's byte budget).
	ConsumerBytes bool
	// Oldest: the earliest ParkedAt of the stream's parked events.
	Oldest bool
}

// ParkedView is what a store read for a ParkedRead, inside the atomic step
// of the write it decides.
type ParkedView struct {
	Events         []ParkedEvent
	ConsumerBytes  int64
	OldestParkedAt time.Time
}

// at returns the viewed event of sequence seq, or nil.
func (v ParkedView) at(seq int64) *ParkedEvent {
	for i := range v.Events {
		if v.Events[i].Sequence == seq {
			return &v.Events[i]
		}
	}
	return nil
}

// ErrNeedsParkedView is ApplyStream's answer to a command that concerns a
// stream's parked events: read ParkedReadFor's events and ask
// ApplyStreamParked. It never reaches a caller of a store.
var ErrNeedsParkedView = errors.New("store: command needs the stream's parked events; use ApplyStreamParked")

// ParkedReadFor says which parked events cmd needs read, given the stored
// stream (nil when none) at now; false when it needs none, so the write is
// decided by ApplyStream alone. Every command on a live stream with parked
// events that may touch them needs a read, and so does any write to an
// expired stream that still has parked events (they must go before the
// stream starts a new life).
func ParkedReadFor(stored *Stream, cmd StreamCommand, now time.Time) (ParkedRead, bool) {
	live := IsStreamLive(stored, now)
	has := live && stored.Parked > 0
	stale := stored != nil && !live && stored.Parked > 0
	none := ParkedRead{From: 1, To: 0}
	switch c := cmd.(type) {
	case ClaimStreamParams:
		if c.Park {
			return ParkedRead{From: c.Sequence, To: c.Sequence, ConsumerBytes: true}, true
		}
		if has {
			return ParkedRead{From: c.Sequence, To: c.Sequence}, true
		}
		return none, stale
	case CompleteStreamParams:
		return finishRead(stored, c.Sequence), has
	case RejectStreamParams:
		return finishRead(stored, c.Sequence), has
	case ClaimParkedParams:
		if has {
			return ParkedRead{From: stored.HighWater + 1, To: stored.HighWater + 1, Payloads: true}, true
		}
	case DropParkedParams:
		if has {
			to := c.To
			if to == 0 {
				to = math.MaxInt64
			}
			return ParkedRead{From: c.From, To: to}, true
		}
	case SkipGapParams:
		if has {
			return ParkedRead{From: stored.HighWater + 1, To: math.MaxInt64, Limit: 1, Oldest: true}, true
		}
	case ResetStreamParams:
		if has {
			return ParkedRead{From: 1, To: c.HighWater}, true
		}
		return none, stale
	}
	return none, false
}

// finishRead is a finish's read: its own sequence (a handed-out event's
// parked copy) and the next (the event to hand back).
func finishRead(stored *Stream, seq int64) ParkedRead {
	if stored == nil {
		return ParkedRead{From: 1, To: 0}
	}
	return ParkedRead{From: seq, To: seq + 1, Payloads: true}
}

// ApplyStreamParked is ApplyStream for a stream whose parked events matter:
// view holds what ParkedReadFor named. Beyond ApplyStream's rules:
//
// A claim with Park of a dense stream's sequence n (n > mark, checked as
// ApplyStream does first):
//
//	n already parked, another digest     ErrDigestMismatch
//	n already parked, not its turn yet   StreamParked, nothing changes
//	  or in flight under a live lease
//	n > mark + 1 (a gap)                 StreamParked: the event is stored,
//	                                     unless the stream holds MaxParked
//	                                     events or the consumer's bytes
//	                                     would pass MaxParkedBytes
//	                                     (ErrParkFull, nothing changes)
//	otherwise                            as without Park
//
// A claim of a parked sequence without Park is checked against its digest,
// and acquires it when it is mark + 1 and no live lease is held.
//
// A finish (Complete or Reject) of n deletes n's parked copy and, when n + 1
// is parked, hands it out in the same write: n + 1 becomes the claim in
// flight, under the next fencing token, the finished claim's owner and
// NextLeaseTTL. The repeat of that finish returns the same HandedOut while
// n + 1 is still in flight under that token.
//
// ClaimParked hands out the parked mark + 1 when no live lease holds it.
// SkipGap moves the mark to the lowest parked sequence - 1 (see
// SkipGapParams for when); DropParked deletes the viewed events in its
// range; ResetStream deletes parked events at or below its new mark.
//
// So the mark only ever passes a parked event by finishing it (after it was
// handed out or claimed), by an admin's reset, or after a drop; and
// parked events are handed out one at a time, in sequence order.
func ApplyStreamParked(stored *Stream, view ParkedView, cmd StreamCommand, now time.Time) (StreamDecision, error) {
	now = Now(now)
	var tokenFloor int64
	stale := false
	if stored != nil && !now.Before(stored.ExpiresAt) {
		// The parked events of a forgotten stream are not its new life's.
		stale = stored.Parked > 0
		view.ConsumerBytes -= stored.ParkedBytes
		view.Events = nil
		tokenFloor, stored = stored.FencingToken, nil
	}
	var (
		d   StreamDecision
		err error
	)
	switch c := cmd.(type) {
	case ClaimStreamParams:
		d, err = applyStreamClaim(stored, tokenFloor, view, c, now)
	case CompleteStreamParams:
		d, err = applyStreamFinish(stored, view, finish{c.Sequence, c.FencingToken, Completed, nil, c.NextLeaseTTL, c.Policy}, now)
	case RejectStreamParams:
		rej := c.Rejection
		rej.Retryable = false
		if len(rej.Detail) == 0 {
			rej.Detail = nil
		}
		d, err = applyStreamFinish(stored, view, finish{c.Sequence, c.FencingToken, Rejected, &rej, c.NextLeaseTTL, c.Policy}, now)
	case ReleaseStreamParams:
		d, err = applyStreamRelease(stored, c, now)
	case ExtendStreamLeaseParams:
		d, err = applyStreamExtend(stored, c, now)
	case ResetStreamParams:
		d, err = applyStreamReset(stored, tokenFloor, view, c, now)
	case ClaimParkedParams:
		d, err = applyClaimParked(stored, view, c, now)
	case DropParkedParams:
		d, err = applyDropParked(stored, view, c, now)
	case SkipGapParams:
		d, err = applySkipGap(stored, view, c, now)
	default:
		return StreamDecision{}, errUnknownStreamCommand(cmd)
	}
	if err != nil {
		return StreamDecision{}, err
	}
	if !d.Write { // a dry run shows the stream and counts, and writes nothing
		d.Unpark, d.Park = nil, nil
	}
	if stale && d.Write {
		d.UnparkAll = true
	}
	return d, nil
}

// digestsDiffer: both given and not equal (an absent digest matches any).
func digestsDiffer(a, b []byte) bool {
	return len(a) > 0 && len(b) > 0 && !bytes.Equal(a, b)
}

// park stores c's event on base, within the policy's bounds.
func park(base Stream, view ParkedView, c ClaimStreamParams, now time.Time) (StreamDecision, error) {
	limit := c.Policy.MaxParked
	if limit <= 0 {
		limit = DefaultMaxParked
	}
	size := int64(len(c.Payload))
	if base.Parked >= limit || (c.Policy.MaxParkedBytes > 0 && view.ConsumerBytes+size > c.Policy.MaxParkedBytes) {
		return StreamDecision{}, &StreamConflictError{Err: ErrParkFull, Stream: base}
	}
	ev := ParkedEvent{Consumer: c.Consumer, Stream: c.Stream, Sequence: c.Sequence,
		PayloadBytes: size, ParkedAt: now}
	if len(c.Digest) > 0 {
		ev.Digest = c.Digest
	}
	if size > 0 {
		ev.Payload = c.Payload
	}
	next := base
	next.Parked++
	next.ParkedBytes += size
	next.UpdatedAt = now
	if next.LeaseExpiresAt.IsZero() { // a stream new with this park: no lease, as after a finish
		next.LeaseExpiresAt = now
	}
	if keep := Now(now.Add(c.Policy.streamTTL())); keep.After(next.ExpiresAt) {
		next.ExpiresAt = keep
	}
	return StreamDecision{Stream: next, Write: true, Outcome: StreamParked, Park: &ev}, nil
}

// unpark deletes ev from next's parked events.
func unpark(next *Stream, d *StreamDecision, ev ParkedEvent) {
	next.Parked--
	next.ParkedBytes -= ev.PayloadBytes
	d.Unpark = append(d.Unpark, ev.Sequence)
}

// handOut makes ev next's claim in flight, for owner, and records it in d.
func handOut(next *Stream, d *StreamDecision, ev ParkedEvent, owner string, ttl time.Duration, p StreamPolicy, now time.Time) {
	next.InFlight = ev.Sequence
	next.Digest = ev.Digest
	next.FencingToken++
	next.Owner = owner
	next.UpdatedAt = now
	setStreamLease(next, ttl, p, now)
	d.Write = true
	d.HandedOut = &HandedOut{Event: ev, FencingToken: next.FencingToken, Owner: owner, LeaseExpiresAt: next.LeaseExpiresAt}
}

// handedOutAgain is the HandedOut a repeated finish of seq under token
// returns: the event it handed out, while still in flight under its token.
func handedOutAgain(stored *Stream, view ParkedView, seq, token int64) *HandedOut {
	ev := view.at(seq + 1)
	if ev == nil || stored.InFlight != seq+1 || stored.FencingToken != token+1 {
		return nil
	}
	return &HandedOut{Event: *ev, FencingToken: stored.FencingToken, Owner: stored.Owner, LeaseExpiresAt: stored.LeaseExpiresAt}
}

func applyClaimParked(stored *Stream, view ParkedView, c ClaimParkedParams, now time.Time) (StreamDecision, error) {
	if stored == nil {
		return StreamDecision{}, nil
	}
	ev := view.at(stored.HighWater + 1)
	if ev == nil || stored.Mode != Dense || stored.LeaseLive(now) {
		return StreamDecision{Stream: *stored}, nil
	}
	next := *stored
	d := StreamDecision{}
	handOut(&next, &d, *ev, c.Owner, c.Policy.lease(c.LeaseTTL), c.Policy, now)
	d.Stream = next
	return d, nil
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
