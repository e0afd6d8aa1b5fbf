package store

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// StreamCommand is a write to one stream: a ClaimStreamParams,
// CompleteStreamParams, RejectStreamParams, ReleaseStreamParams,
// ExtendStreamLeaseParams, ResetStreamParams, or one of park mode's
// ClaimParkedParams (of one named stream), DropParkedParams and
// SkipGapParams. Op and Target name it and what it writes, as Command's
// do.
type StreamCommand interface {
	isStreamCommand()
	Op() Op
	Target() (consumer, stream string)
}

func (ClaimStreamParams) Op() Op       { return OpClaimStream }
func (CompleteStreamParams) Op() Op    { return OpCompleteStream }
func (RejectStreamParams) Op() Op      { return OpRejectStream }
func (ReleaseStreamParams) Op() Op     { return OpReleaseStream }
func (ExtendStreamLeaseParams) Op() Op { return OpExtendStreamLease }
func (ResetStreamParams) Op() Op       { return OpResetStream }
func (ClaimParkedParams) Op() Op       { return OpClaimParked }
func (DropParkedParams) Op() Op        { return OpDropParked }
func (SkipGapParams) Op() Op           { return OpSkipGap }

func (ClaimStreamParams) isStreamCommand()       {}
func (CompleteStreamParams) isStreamCommand()    {}
func (RejectStreamParams) isStreamCommand()      {}
func (ReleaseStreamParams) isStreamCommand()     {}
func (ExtendStreamLeaseParams) isStreamCommand() {}
func (ResetStreamParams) isStreamCommand()       {}
func (ClaimParkedParams) isStreamCommand()       {}
func (DropParkedParams) isStreamCommand()        {}
func (SkipGapParams) isStreamCommand()           {}

func (p ClaimStreamParams) Target() (consumer, stream string)       { return p.Consumer, p.Stream }
func (p CompleteStreamParams) Target() (consumer, stream string)    { return p.Consumer, p.Stream }
func (p RejectStreamParams) Target() (consumer, stream string)      { return p.Consumer, p.Stream }
func (p ReleaseStreamParams) Target() (consumer, stream string)     { return p.Consumer, p.Stream }
func (p ExtendStreamLeaseParams) Target() (consumer, stream string) { return p.Consumer, p.Stream }
func (p ResetStreamParams) Target() (consumer, stream string)       { return p.Consumer, p.Stream }
func (p ClaimParkedParams) Target() (consumer, stream string)       { return p.Consumer, p.Stream }
func (p DropParkedParams) Target() (consumer, stream string)        { return p.Consumer, p.Stream }
func (p SkipGapParams) Target() (consumer, stream string)           { return p.Consumer, p.Stream }

// StreamOf returns the consumer and stream a stream command writes (the
// stream is empty for a ClaimParked of any stream).
func StreamOf(cmd StreamCommand) (consumer, stream string) { return cmd.Target() }

// StreamDecision is what ApplyStream decides.
type StreamDecision struct {
	// Stream is the stream after the command.
	Stream Stream
	// Write says whether Stream must be stored: false for a duplicate, an
	// in-progress claim, a repeated finish, or a dry run.
	Write bool
	// Outcome and RetryAfter are set for claims.
	Outcome    StreamOutcome
	RetryAfter time.Duration

	// The writes to the stream's parked events, in the same atomic step as
	// Stream (only with Write): first UnparkAll (every parked event of the
	// stream: an expired stream's, which its new life must not inherit),
	// then Unpark (these sequences), then Park (store this event).
	UnparkAll bool
	Unpark    []int64
	Park      *ParkedEvent
	// HandedOut is a parked event acquired for the caller: by a finish (its
	// Next, also on a repeat), or by ClaimParked.
	HandedOut *HandedOut
	// Skipped is SkipGap's range; Dropped DropParked's count.
	Skipped *SkippedRange
	Dropped int64
}

// errBadSequence is a sequence no caller may send; the API refuses it first.
var errBadSequence = errors.New("store: stream sequence must be positive")

// ApplyStream is the stream state machine, the one place its rules live.
// Given the stored stream (nil when it has none), a command and the store's
// current time, it returns the next stream or the error to report. A claim
// of sequence n finds, in this order:
//
//	n <= high-water mark                 StreamDuplicate, nothing changes
//	n is in flight with another digest   ErrDigestMismatch
//	a live lease is held                 StreamInProgress, with RetryAfter
//	dense and n > high-water mark + 1    ErrSequenceGap, expecting mark + 1
//	otherwise                            StreamAcquired, with a new token
//
// An expired lease is taken over by the next claim with a greater token.
//
// An expired stream counts as absent, but its fencing token keeps counting
// (until the row is reaped), as for keys. A new stream expects sequence 1
// in dense mode unless the policy starts streams at their first claim; so a
// late redelivery to a forgotten dense stream is refused as a gap, except
// for sequence 1, which runs again. docs/guarantees.md says what that
// means for choosing StreamTTL.
//
// ApplyStream is pure: every backend calls it inside its own atomic step.
// A command that concerns the stream's parked events (ParkedReadFor says
// which) gets ErrNeedsParkedView: the backend then reads them in the same
// step and asks ApplyStreamParked, which holds the park rules.
func ApplyStream(stored *Stream, cmd StreamCommand, now time.Time) (StreamDecision, error) {
	if _, need := ParkedReadFor(stored, cmd, now); need {
		return StreamDecision{}, ErrNeedsParkedView
	}
	return ApplyStreamParked(stored, ParkedView{}, cmd, now)
}

func errUnknownStreamCommand(cmd StreamCommand) error {
	return fmt.Errorf("store: unknown stream command %T", cmd)
}

// IsStreamLive reports whether a stored stream still counts at time now.
func IsStreamLive(s *Stream, now time.Time) bool {
	return s != nil && Now(now).Before(s.ExpiresAt)
}

func (p StreamPolicy) lease(requested time.Duration) time.Duration {
	if requested > 0 {
		return requested
	}
	return p.DefaultLeaseTTL
}

func (p StreamPolicy) streamTTL() time.Duration {
	if p.StreamTTL > 0 {
		return p.StreamTTL
	}
	return DefaultStreamTTL
}

// claimMode is the mode a claim asks for: its own, else the policy's; empty
// when neither names one. Both naming different modes is a mismatch.
func claimMode(c ClaimStreamParams) (StreamMode, bool) {
	if c.Mode != "" && c.Policy.Mode != "" && c.Mode != c.Policy.Mode {
		return "", false
	}
	if c.Mode != "" {
		return c.Mode, true
	}
	return c.Policy.Mode, true
}

func applyStreamClaim(stored *Stream, tokenFloor int64, view ParkedView, c ClaimStreamParams, now time.Time) (StreamDecision, error) {
	if c.Sequence < 1 {
		return StreamDecision{}, errBadSequence
	}
	mode, ok := claimMode(c)
	if stored == nil {
		fresh := Stream{Consumer: c.Consumer, Stream: c.Stream, Mode: mode, FencingToken: tokenFloor, CreatedAt: now}
		if fresh.Mode == "" {
			fresh.Mode = Dense
		}
		switch {
		case !ok:
			return StreamDecision{}, &StreamConflictError{Err: ErrModeMismatch, Stream: fresh}
		case isGap(&fresh, c) && c.Park:
			return park(fresh, view, c, now)
		case isGap(&fresh, c):
			return StreamDecision{}, &StreamConflictError{Err: ErrSequenceGap, Stream: fresh, Expected: 1}
		}
		return acquireStream(fresh, c, now), nil
	}
	// An existing stream keeps the mode it was created with, even if the
	// policy changed since; only a claim that names another is refused.
	if c.Mode != "" && c.Mode != stored.Mode {
		return StreamDecision{}, &StreamConflictError{Err: ErrModeMismatch, Stream: *stored}
	}
	parked := view.at(c.Sequence)
	switch {
	case c.Sequence <= stored.HighWater:
		return StreamDecision{Stream: *stored, Outcome: StreamDuplicate}, nil
	case parked != nil && digestsDiffer(c.Digest, parked.Digest):
		return StreamDecision{}, &StreamConflictError{Err: ErrDigestMismatch, Stream: *stored}
	case c.Park && parked != nil && (isGap(stored, c) || stored.LeaseLive(now)):
		return StreamDecision{Stream: *stored, Outcome: StreamParked}, nil
	case c.Park && isGap(stored, c):
		return park(*stored, view, c, now)
	case c.Sequence == stored.InFlight && len(c.Digest) > 0 && len(stored.Digest) > 0 && !bytes.Equal(c.Digest, stored.Digest):
		return StreamDecision{}, &StreamConflictError{Err: ErrDigestMismatch, Stream: *stored}
	case stored.LeaseLive(now):
		return StreamDecision{Stream: *stored, Outcome: StreamInProgress, RetryAfter: stored.LeaseExpiresAt.Sub(now)}, nil
	case isGap(stored, c):
		return StreamDecision{}, &StreamConflictError{Err: ErrSequenceGap, Stream: *stored, Expected: stored.HighWater + 1}
	}
	if parked != nil && len(c.Digest) == 0 {
		c.Digest = parked.Digest
	}
	return acquireStream(*stored, c, now), nil
}

// isGap reports whether a claim skips sequences a dense stream expects
// first. A dense stream with no mark yet (new, or reset to 0) expects 1,
// unless the policy starts streams at their first claim.
func isGap(s *Stream, c ClaimStreamParams) bool {
	if s.Mode != Dense || (s.HighWater == 0 && c.Policy.Start == StartAtFirstClaim) {
		return false
	}
	return c.Sequence != s.HighWater+1
}

func acquireStream(next Stream, c ClaimStreamParams, now time.Time) StreamDecision {
	next.InFlight = c.Sequence
	next.Digest = nil
	if len(c.Digest) > 0 { // no digest is nil, as every store reads it back
		next.Digest = c.Digest
	}
	next.FencingToken++
	next.Owner = c.Owner
	next.UpdatedAt = now
	setStreamLease(&next, c.Policy.lease(c.LeaseTTL), c.Policy, now)
	return StreamDecision{Stream: next, Write: true, Outcome: StreamAcquired}
}

// setStreamLease starts a lease at now. The stream outlives its lease by
// the stream TTL, so an abandoned claim stays visible for reconciliation.
func setStreamLease(s *Stream, ttl time.Duration, p StreamPolicy, now time.Time) {
	s.LeaseExpiresAt = Now(now.Add(ttl))
	s.ExpiresAt = Now(s.LeaseExpiresAt.Add(p.streamTTL()))
}

// clearClaim ends the in-flight claim at now; the stream is then idle and
// kept for the stream TTL.
func clearClaim(s *Stream, p StreamPolicy, now time.Time) {
	s.InFlight = 0
	s.Digest = nil
	s.Owner = ""
	s.LeaseExpiresAt = now
	s.UpdatedAt = now
	s.ExpiresAt = Now(now.Add(p.streamTTL()))
}

// finish is a CompleteStream or a RejectStream.
type finish struct {
	seq, token int64
	outcome    State
	rejection  *Rejection
	nextTTL    time.Duration
	policy     StreamPolicy
}

// finishedBy reports whether the call holding token finished sequence seq.
func finishedBy(s *Stream, seq, token int64) bool {
	return s.FinishedToken != 0 && s.FinishedToken == token && s.HighWater == seq
}

// holds reports whether token is the in-flight claim of sequence seq.
func holds(s *Stream, seq, token int64) bool {
	return s.InFlight != 0 && s.InFlight == seq && s.FencingToken == token
}

func applyStreamFinish(stored *Stream, view ParkedView, f finish, now time.Time) (StreamDecision, error) {
	if stored == nil {
		return StreamDecision{}, ErrLeaseLost
	}
	if finishedBy(stored, f.seq, f.token) {
		same := stored.LastOutcome == f.outcome &&
			(f.rejection == nil || (stored.LastRejection != nil && sameRejection(*stored.LastRejection, *f.rejection)))
		if same {
			return StreamDecision{Stream: *stored, HandedOut: handedOutAgain(stored, view, f.seq, f.token)}, nil
		}
		return StreamDecision{}, &StreamConflictError{Err: ErrAlreadyFinished, Stream: *stored}
	}
	if !holds(stored, f.seq, f.token) {
		return StreamDecision{}, &StreamConflictError{Err: ErrLeaseLost, Stream: *stored}
	}
	next := *stored
	next.HighWater = f.seq
	next.LastOutcome = f.outcome
	next.LastRejection = f.rejection
	next.FinishedToken = f.token
	if f.outcome == Rejected {
		next.Rejected++
	}
	clearClaim(&next, f.policy, now)
	d := StreamDecision{Write: true}
	if own := view.at(f.seq); own != nil {
		unpark(&next, &d, *own)
	}
	if ev := view.at(f.seq + 1); ev != nil && next.Mode == Dense {
		handOut(&next, &d, *ev, stored.Owner, f.policy.lease(f.nextTTL), f.policy, now)
	}
	d.Stream = next
	return d, nil
}

func applyStreamRelease(stored *Stream, c ReleaseStreamParams, now time.Time) (StreamDecision, error) {
	switch {
	case stored == nil:
		return StreamDecision{}, ErrLeaseLost
	case finishedBy(stored, c.Sequence, c.FencingToken):
		return StreamDecision{}, &StreamConflictError{Err: ErrAlreadyFinished, Stream: *stored}
	case stored.InFlight == 0 && stored.FencingToken == c.FencingToken && stored.FinishedToken != c.FencingToken &&
		c.Sequence > stored.HighWater:
		// Released already, and nobody has claimed since: a repeat.
		return StreamDecision{Stream: *stored}, nil
	case !holds(stored, c.Sequence, c.FencingToken):
		return StreamDecision{}, &StreamConflictError{Err: ErrLeaseLost, Stream: *stored}
	}
	next := *stored
	clearClaim(&next, c.Policy, now)
	return StreamDecision{Stream: next, Write: true}, nil
}

func applyStreamExtend(stored *Stream, c ExtendStreamLeaseParams, now time.Time) (StreamDecision, error) {
	switch {
	case stored == nil:
		return StreamDecision{}, ErrLeaseLost
	case finishedBy(stored, c.Sequence, c.FencingToken):
		return StreamDecision{}, &StreamConflictError{Err: ErrAlreadyFinished, Stream: *stored}
	case !holds(stored, c.Sequence, c.FencingToken):
		return StreamDecision{}, &StreamConflictError{Err: ErrLeaseLost, Stream: *stored}
	}
	next := *stored
	next.UpdatedAt = now
	setStreamLease(&next, c.Policy.lease(c.LeaseTTL), c.Policy, now)
	return StreamDecision{Stream: next, Write: true}, nil
}

func applyStreamReset(stored *Stream, tokenFloor int64, view ParkedView, c ResetStreamParams, now time.Time) (StreamDecision, error) {
	if c.HighWater < 0 {
		return StreamDecision{}, errors.New("store: high-water mark must not be negative")
	}
	var next Stream
	if stored != nil {
		next = *stored
	} else {
		next = Stream{Consumer: c.Consumer, Stream: c.Stream, Mode: c.Mode, FencingToken: tokenFloor, CreatedAt: now}
		if next.Mode == "" {
			next.Mode = c.Policy.Mode
		}
		if next.Mode == "" {
			next.Mode = Dense
		}
	}
	// The token moves on, so the holder of a dropped claim, and any repeat
	// of the finish that set the old mark, is told its lease is lost.
	next.FencingToken++
	next.HighWater = c.HighWater
	next.LastOutcome = ""
	next.LastRejection = nil
	next.FinishedToken = 0
	clearClaim(&next, c.Policy, now)
	d := StreamDecision{Write: !c.DryRun}
	// Parked events at or below the new mark are duplicates now.
	for _, ev := range view.Events {
		if ev.Sequence <= c.HighWater {
			unpark(&next, &d, ev)
		}
	}
	d.Stream = next
	return d, nil
}
