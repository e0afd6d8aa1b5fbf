package store

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"
)

// FuzzApplyStreamParked runs random scripts of park-mode commands against
// one dense stream and a model of its parked events, kept as a store keeps
// them: each step reads what ParkedReadFor names, asks ApplyStreamParked
// and applies the decision's UnparkAll, Unpark and Park. After every step:
//
//   - the stream's Parked and ParkedBytes count the model's events exactly;
//
//   - every parked event is above the mark: the mark never passes a parked
//     event that was not released (handed out or claimed, then finished),
//     skipped over by a gap skip (which stops below it), dropped or reset;
//
//   - an event leaves the parked set only by the finish of its own
//     sequence while in flight, a drop in range, a reset at or above it,
//     or with its forgotten stream; never by a claim, release or skip;
//
//   - a parked event is finished (released for good) at most once, and
//     those finishes come in increasing sequence order;
//
//   - a hand-out is the event right after the mark, with the payload it
//     was parked with, as the stream's claim in flight under its token,
//     and never while another live lease holds the stream;
//
//   - a park stores a sequence past mark + 1 that was not parked, within
//     MaxParked.
//
//     go test -run '^$' -fuzz FuzzApplyStreamParked -fuzztime 5m ./server/store/
func FuzzApplyStreamParked(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 3, 0, 4, 1, 1, 2, 0, 2, 0})          // park 3 and 4, claim 1, complete: hand-outs follow
	f.Add([]byte{0, 3, 1, 1, 2, 0, 6, 9, 7, 0, 2, 0})    // park 3, claim 1, complete (no next), clock, claim parked
	f.Add([]byte{0, 5, 0, 3, 6, 9, 6, 9, 8, 1, 7, 0})    // parks, time passes, gap-timeout skip, claim parked
	f.Add([]byte{0, 3, 0, 2, 1, 1, 2, 0, 6, 5, 2, 0x10}) // hand-out, lease runs out, repeated complete
	f.Fuzz(func(t *testing.T, script []byte) {
		s := &parkUnderFuzz{t: t, now: fuzzEpoch, parked: map[int64]ParkedEvent{}}
		for i := 0; i+1 < len(script); i += 2 {
			s.step(script[i], script[i+1])
		}
	})
}

var fuzzParkPolicy = StreamPolicy{DefaultLeaseTTL: 30 * time.Second, StreamTTL: 48 * time.Hour,
	Mode: Dense, MaxParked: 4, MaxParkedBytes: 40, GapTimeout: time.Minute, OnGapTimeout: GapSkip}

type parkUnderFuzz struct {
	t      *testing.T
	now    time.Time
	stored *Stream
	parked map[int64]ParkedEvent
	// finishedParked are the parked sequences finished in the stream's
	// present life, in order.
	finishedParked []int64
	log            []string
}

// fuzzPayload is the payload a park of seq carries, so a hand-out can be
// checked against what was parked.
func fuzzPayload(seq int64, arg byte) []byte {
	return []byte(fmt.Sprintf("event %d %s", seq, []string{"", "x", "xxxxxxxxxx"}[int(arg)%3]))
}

func (s *parkUnderFuzz) step(op, arg byte) {
	var mark, token int64
	if s.stored != nil {
		mark, token = s.stored.HighWater, s.stored.FencingToken
	}
	seq := max(1, mark+[]int64{1, 2, 3, 4, 0, -1}[int(arg)%6])
	tok := token + []int64{0, 0, -1, 1}[int(arg>>4)%4]
	p := fuzzParkPolicy
	switch op % 10 {
	case 0:
		s.apply(ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: seq, Digest: pick(fuzzDigests, arg>>6),
			Owner: "o", Park: true, Payload: fuzzPayload(seq, arg>>3), Policy: p})
	case 1:
		s.apply(ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: seq, Digest: pick(fuzzDigests, arg>>6),
			LeaseTTL: pick(fuzzLeases, arg>>3), Owner: "o", Policy: p})
	case 2:
		s.apply(CompleteStreamParams{Consumer: "c", Stream: "s", Sequence: s.inFlightOr(seq), FencingToken: tok,
			NextLeaseTTL: pick(fuzzLeases, arg>>2), Policy: p})
	case 3:
		s.apply(RejectStreamParams{Consumer: "c", Stream: "s", Sequence: s.inFlightOr(seq), FencingToken: tok,
			Rejection: Rejection{Reason: "bad"}, Policy: p})
	case 4:
		s.apply(ReleaseStreamParams{Consumer: "c", Stream: "s", Sequence: s.inFlightOr(seq), FencingToken: tok, Policy: p})
	case 5:
		s.apply(ClaimParkedParams{Consumer: "c", Stream: "s", Owner: "pickup", Policy: p})
	case 6:
		s.now = s.now.Add(pick(fuzzSteps, arg))
		s.log = append(s.log, "clock -> "+s.now.Format(time.RFC3339Nano))
	case 7:
		s.apply(SkipGapParams{Consumer: "c", Stream: "s", Cause: []SkipCause{SkipByGapTimeout, SkipByAdmin}[arg%2],
			DryRun: arg&0x80 != 0, Policy: p})
	case 8:
		s.apply(DropParkedParams{Consumer: "c", Stream: "s", From: seq, To: seq + int64(arg>>6), DryRun: arg&0x08 != 0, Policy: p})
	case 9:
		s.apply(ResetStreamParams{Consumer: "c", Stream: "s", HighWater: max(0, mark+int64(arg%5)-1), Policy: p})
	}
}

func (s *parkUnderFuzz) inFlightOr(seq int64) int64 {
	if s.stored != nil && s.stored.InFlight != 0 {
		return s.stored.InFlight
	}
	return seq
}

// view reads the model as a store would for r.
func (s *parkUnderFuzz) view(r ParkedRead) ParkedView {
	var v ParkedView
	for _, seq := range slices.Sorted(maps.Keys(s.parked)) {
		ev := s.parked[seq]
		v.ConsumerBytes += ev.PayloadBytes
		if v.OldestParkedAt.IsZero() || ev.ParkedAt.Before(v.OldestParkedAt) {
			v.OldestParkedAt = ev.ParkedAt
		}
		if seq >= r.From && seq <= r.To && (r.Limit == 0 || len(v.Events) < r.Limit) {
			if !r.Payloads {
				ev.Payload = nil
			}
			v.Events = append(v.Events, ev)
		}
	}
	return v
}

func (s *parkUnderFuzz) apply(cmd StreamCommand) {
	s.log = append(s.log, fmt.Sprintf("%T %+v", cmd, cmd))
	var v ParkedView
	if r, need := ParkedReadFor(s.stored, cmd, s.now); need {
		v = s.view(r)
	}
	before := cloneStream(s.stored)
	live := IsStreamLive(before, s.now)
	d, err := ApplyStreamParked(s.stored, v, cmd, s.now)
	if err != nil {
		s.checkRefusal(cmd, err)
		return
	}
	if !d.Write {
		if d.Park != nil || len(d.Unpark) > 0 || d.UnparkAll || (d.HandedOut != nil && !isFinish(cmd)) {
			s.fail("no write, but parked writes or a new hand-out: %+v", d)
		}
		s.checkHandOut(cmd, before, d)
		return
	}
	if !live {
		s.finishedParked = nil
	}
	s.checkRemovals(cmd, before, live, d)
	if d.UnparkAll {
		clear(s.parked)
	}
	for _, seq := range d.Unpark {
		delete(s.parked, seq)
	}
	if d.Park != nil {
		s.checkPark(before, live, d)
		s.parked[d.Park.Sequence] = *d.Park
	}
	next := d.Stream
	s.stored = &next
	s.checkHandOut(cmd, before, d)
	s.checkCounts()
}

func isFinish(cmd StreamCommand) bool {
	switch cmd.(type) {
	case CompleteStreamParams, RejectStreamParams:
		return true
	}
	return false
}

func (s *parkUnderFuzz) checkRefusal(cmd StreamCommand, err error) {
	for _, e := range []error{ErrLeaseLost, ErrAlreadyFinished, ErrSequenceGap, ErrDigestMismatch,
		ErrParkFull, ErrNoGap, ErrNotFound} {
		if errors.Is(err, e) {
			return
		}
	}
	s.fail("%T refused with %v", cmd, err)
}

// checkRemovals holds every parked event the decision deletes to a reason.
func (s *parkUnderFuzz) checkRemovals(cmd StreamCommand, before *Stream, live bool, d StreamDecision) {
	if d.UnparkAll && live {
		s.fail("UnparkAll on a live stream")
	}
	for _, seq := range d.Unpark {
		if _, ok := s.parked[seq]; !ok {
			s.fail("unparked %d, which was not parked", seq)
		}
		switch c := cmd.(type) {
		case CompleteStreamParams, RejectStreamParams:
			if seq != d.Stream.HighWater || before.InFlight != seq {
				s.fail("a finish unparked %d with the mark at %d, in flight %d", seq, d.Stream.HighWater, before.InFlight)
			}
			if n := len(s.finishedParked); n > 0 && s.finishedParked[n-1] >= seq {
				s.fail("parked %d finished after %v", seq, s.finishedParked)
			}
			s.finishedParked = append(s.finishedParked, seq)
		case DropParkedParams:
			if seq < c.From || (c.To != 0 && seq > c.To) {
				s.fail("dropped %d outside [%d, %d]", seq, c.From, c.To)
			}
		case ResetStreamParams:
			if seq > c.HighWater {
				s.fail("reset to %d unparked %d", c.HighWater, seq)
			}
			s.finishedParked = nil
		default:
			s.fail("%T unparked %d", cmd, seq)
		}
	}
}

func (s *parkUnderFuzz) checkPark(before *Stream, live bool, d StreamDecision) {
	ev := d.Park
	var mark int64
	if live {
		mark = before.HighWater
		if before.Parked >= fuzzParkPolicy.MaxParked {
			s.fail("parked %d past MaxParked with %d parked", ev.Sequence, before.Parked)
		}
	}
	if _, ok := s.parked[ev.Sequence]; ok && live {
		s.fail("parked %d twice", ev.Sequence)
	}
	if ev.Sequence <= mark+1 || d.Outcome != StreamParked {
		s.fail("parked %d with the mark at %d, outcome %v", ev.Sequence, mark, d.Outcome)
	}
}

func (s *parkUnderFuzz) checkHandOut(cmd StreamCommand, before *Stream, d StreamDecision) {
	h := d.HandedOut
	if h == nil {
		return
	}
	next := d.Stream
	parked, ok := s.parked[h.Event.Sequence]
	switch {
	case !ok:
		s.fail("handed out %d, which is not parked", h.Event.Sequence)
	case h.Event.Sequence != next.HighWater+1 || next.InFlight != h.Event.Sequence ||
		next.FencingToken != h.FencingToken || !next.LeaseExpiresAt.Equal(h.LeaseExpiresAt):
		s.fail("hand-out %+v does not match the stream %+v", h, next)
	case !bytes.Equal(h.Event.Payload, parked.Payload) || !bytes.Equal(h.Event.Digest, next.Digest):
		s.fail("hand-out payload %q digest %x, parked %q, stream digest %x", h.Event.Payload, h.Event.Digest, parked.Payload, next.Digest)
	}
	if _, ok := cmd.(ClaimParkedParams); ok && before.LeaseLive(s.now) {
		s.fail("ClaimParked handed out %d while %+v held a live lease", h.Event.Sequence, before)
	}
}

func (s *parkUnderFuzz) checkCounts() {
	st := s.stored
	var n, b int64
	for seq, ev := range s.parked {
		n++
		b += ev.PayloadBytes
		if seq <= st.HighWater {
			s.fail("parked %d at or below the mark %d", seq, st.HighWater)
		}
	}
	if st.Parked != n || st.ParkedBytes != b {
		s.fail("stream counts %d parked, %d bytes; the model has %d, %d", st.Parked, st.ParkedBytes, n, b)
	}
}

func (s *parkUnderFuzz) fail(format string, args ...any) {
	s.t.Helper()
	for _, line := range s.log {
		s.t.Logf("  %s", line)
	}
	s.t.Fatalf(format, args...)
}
