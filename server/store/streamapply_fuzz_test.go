package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// FuzzApplyStream runs random scripts of stream commands against one stream,
// with a clock that moves forward by random steps (past leases and the
// stream TTL too), and checks after every step:
//
//   - the high-water mark never decreases, except through ResetStream;
//   - fencing tokens never decrease;
//   - a refused call, and a call that writes nothing, changes nothing;
//   - a duplicate is at or below the mark, an acquisition above it (in dense
//     mode exactly one above), and never while another lease is live;
//   - in dense mode the finished sequences, since the stream was new or
//     reset, are exactly 1..mark (or first..mark), each finished once.
//
// Each script byte picks an operation and the next its arguments. Run it
// longer with
//
//	go test -run '^$' -fuzz FuzzApplyStream -fuzztime 5m ./server/store/
func FuzzApplyStream(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 1, 0, 0, 2, 1, 0})       // claim 1, complete, claim 2, complete
	f.Add([]byte{0, 1, 5, 4, 0, 1, 1, 1})       // claim, lease runs out, takeover, stale complete
	f.Add([]byte{0, 1, 2, 0, 0, 3, 6, 2, 0, 1}) // claim, reject (poison), gap, reset, claim
	f.Add([]byte{0, 0x41, 1, 0, 0, 0x45, 3, 0}) // versions: claim, complete, jump, release
	f.Fuzz(func(t *testing.T, script []byte) {
		s := &streamUnderFuzz{t: t, now: fuzzEpoch}
		for i := 0; i+1 < len(script); i += 2 {
			s.step(script[i], script[i+1])
		}
	})
}

var fuzzStreamPolicy = StreamPolicy{DefaultLeaseTTL: 30 * time.Second, StreamTTL: 48 * time.Hour}

// streamUnderFuzz is one stream as a store keeps it, and the model's memory
// of which sequences it finished.
type streamUnderFuzz struct {
	t      *testing.T
	now    time.Time
	stored *Stream
	// finished are the sequences finished since the stream was new or
	// reset; first is where a dense stream began counting.
	finished []int64
	first    int64
	log      []string
}

func (s *streamUnderFuzz) step(op, arg byte) {
	seq := s.sequence(arg)
	switch op % 7 {
	case 0:
		modes := []StreamMode{"", Dense, Versions}
		p := fuzzStreamPolicy
		if arg&0x80 != 0 {
			p.Start = StartAtFirstClaim
		}
		s.apply(ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: seq, Mode: modes[int(arg>>6)%3],
			Digest: pick(fuzzDigests, arg>>3), LeaseTTL: pick(fuzzLeases, arg>>4), Owner: "o", Policy: p})
	case 1:
		s.apply(CompleteStreamParams{Sequence: seq, FencingToken: s.token(arg >> 4), Policy: fuzzStreamPolicy})
	case 2:
		s.apply(RejectStreamParams{Sequence: seq, FencingToken: s.token(arg >> 4),
			Rejection: pick(fuzzRejections, arg>>6), Policy: fuzzStreamPolicy})
	case 3:
		s.apply(ReleaseStreamParams{Sequence: seq, FencingToken: s.token(arg >> 4), Policy: fuzzStreamPolicy})
	case 4:
		s.apply(ExtendStreamLeaseParams{Sequence: seq, FencingToken: s.token(arg >> 4),
			LeaseTTL: pick(fuzzLeases, arg>>6), Policy: fuzzStreamPolicy})
	case 5:
		s.now = s.now.Add(pick(fuzzSteps, arg))
		s.log = append(s.log, "clock -> "+s.now.Format(time.RFC3339Nano))
	case 6:
		s.apply(ResetStreamParams{Consumer: "c", Stream: "s", HighWater: int64(arg % 8), DryRun: arg&0x80 != 0,
			Policy: fuzzStreamPolicy})
	}
}

// sequence picks a sequence near the stream's: in flight, the mark, the
// mark +1 or +2, one below, or small absolute ones.
func (s *streamUnderFuzz) sequence(arg byte) int64 {
	var mark, inFlight int64
	if s.stored != nil {
		mark, inFlight = s.stored.HighWater, s.stored.InFlight
	}
	choices := []int64{inFlight, mark, mark + 1, mark + 2, mark - 1, 1, 2, 5}
	return max(1, choices[int(arg)%len(choices)])
}

// token picks the current token, a stale one, or one from the future.
func (s *streamUnderFuzz) token(arg byte) int64 {
	var current int64
	if s.stored != nil {
		current = s.stored.FencingToken
	}
	return current + []int64{0, 0, -1, 1}[arg%4]
}

func (s *streamUnderFuzz) apply(cmd StreamCommand) {
	s.log = append(s.log, fmt.Sprintf("%T %+v", cmd, cmd))
	before := cloneStream(s.stored)
	d, err := ApplyStream(s.stored, cmd, s.now)
	if !reflect.DeepEqual(s.stored, before) {
		s.fail("ApplyStream changed the stream it was given")
	}
	var live *Stream
	if IsStreamLive(before, s.now) {
		live = before
	} else {
		s.finished, s.first = nil, 0 // forgotten: the model starts again
	}
	if err != nil {
		if !reflect.DeepEqual(d, StreamDecision{}) {
			s.fail("refusal %v came with a decision %+v", err, d)
		}
		s.checkRefusal(cmd, err)
		return
	}
	s.check(cmd, before, live, d)
	if d.Write {
		next := d.Stream
		s.stored = &next
	}
	s.checkDense()
}

func (s *streamUnderFuzz) checkRefusal(cmd StreamCommand, err error) {
	allowed := []error{ErrLeaseLost, ErrAlreadyFinished}
	if _, ok := cmd.(ClaimStreamParams); ok {
		allowed = []error{ErrSequenceGap, ErrModeMismatch, ErrDigestMismatch}
	}
	for _, e := range allowed {
		if errors.Is(err, e) {
			return
		}
	}
	s.fail("%T refused with %v; want one of %v", cmd, err, allowed)
}

func (s *streamUnderFuzz) check(cmd StreamCommand, before, live *Stream, d StreamDecision) {
	next := d.Stream
	_, isReset := cmd.(ResetStreamParams)
	if !d.Write && !isReset && (live == nil || !reflect.DeepEqual(next, *live)) {
		s.fail("no write, but the decision %+v is not the stored %+v", next, live)
	}
	if before != nil && next.FencingToken < before.FencingToken {
		s.fail("fencing token went down from %d to %d", before.FencingToken, next.FencingToken)
	}
	if live != nil && next.HighWater < live.HighWater && !isReset {
		s.fail("high-water mark went down from %d to %d", live.HighWater, next.HighWater)
	}
	if next.InFlight != 0 && next.InFlight <= next.HighWater {
		s.fail("in flight %d at or below the mark %d", next.InFlight, next.HighWater)
	}
	switch c := cmd.(type) {
	case ClaimStreamParams:
		s.checkClaim(c, before, live, d)
	case CompleteStreamParams, RejectStreamParams:
		if d.Write {
			s.recordFinish(next)
		}
	case ResetStreamParams:
		if d.Write {
			// A mark of 0 is a new stream again: where it starts is open.
			s.finished, s.first = nil, next.HighWater+1
			if next.HighWater == 0 {
				s.first = 0
			}
		}
	}
}

// checkDense holds a dense stream's mark to the model: the sequences
// finished since it was new or reset are first, first+1, ..., mark.
func (s *streamUnderFuzz) checkDense() {
	st := s.stored
	if st == nil || st.Mode != Dense || s.first == 0 {
		return
	}
	for i, seq := range s.finished {
		if seq != s.first+int64(i) {
			s.fail("dense stream finished %v, starting at %d", s.finished, s.first)
		}
	}
	if n := int64(len(s.finished)); st.HighWater != s.first-1+n {
		s.fail("mark %d, but the model finished %v from %d", st.HighWater, s.finished, s.first)
	}
}

// recordFinish notes a finished sequence; the first one since the stream
// was new sets where counting began (checkClaim checks it was allowed to).
func (s *streamUnderFuzz) recordFinish(next Stream) {
	if s.first == 0 {
		s.first = next.HighWater
	}
	s.finished = append(s.finished, next.HighWater)
}

func (s *streamUnderFuzz) checkClaim(c ClaimStreamParams, before, live *Stream, d StreamDecision) {
	next := d.Stream
	switch d.Outcome {
	case StreamDuplicate:
		if live == nil || c.Sequence > live.HighWater {
			s.fail("duplicate of %d on %+v", c.Sequence, live)
		}
	case StreamInProgress:
		if live == nil || !live.LeaseLive(s.now) || d.RetryAfter <= 0 {
			s.fail("in progress on %+v", live)
		}
	case StreamAcquired:
		var mark, token int64
		if live != nil {
			mark = live.HighWater
		}
		if before != nil {
			token = before.FencingToken
		}
		switch {
		case !d.Write || next.InFlight != c.Sequence || next.FencingToken != token+1:
			s.fail("acquired %d as %+v (write %v), token before %d", c.Sequence, next, d.Write, token)
		case live != nil && live.LeaseLive(s.now):
			s.fail("acquired while %+v held a live lease", live)
		case c.Sequence <= mark:
			s.fail("acquired %d at or below the mark %d", c.Sequence, mark)
		case next.Mode == Dense && c.Sequence != mark+1 && (mark != 0 || c.Policy.Start != StartAtFirstClaim):
			s.fail("dense stream acquired %d after mark %d", c.Sequence, mark)
		}
	default:
		s.fail("claim outcome %v", d.Outcome)
	}
}

func (s *streamUnderFuzz) fail(format string, args ...any) {
	s.t.Helper()
	for _, line := range s.log {
		s.t.Logf("  %s", line)
	}
	s.t.Fatalf(format, args...)
}
