package store

import (
	"errors"
	"reflect"
	"testing"
	"time"
)

// The stream fixtures are one stream at t0: events 1..4 are finished
// (4 completed under token 6), and event 5 is in flight under token 7,
// claimed at t0 with a lease of `lease`.
var spol = StreamPolicy{DefaultLeaseTTL: 30 * time.Second, StreamTTL: 72 * time.Hour}

func idleStream() *Stream {
	return &Stream{
		Consumer: "c", Stream: "order-42", Mode: Dense,
		HighWater: 4, LastOutcome: Completed, FinishedToken: 6, FencingToken: 6,
		CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0.Add(-time.Minute),
		LeaseExpiresAt: t0.Add(-time.Minute), ExpiresAt: t0.Add(-time.Minute + spol.StreamTTL),
	}
}

func inFlightStream() *Stream {
	s := idleStream()
	s.InFlight, s.FencingToken, s.Digest, s.Owner = 5, 7, digA, "w-old"
	s.UpdatedAt, s.LeaseExpiresAt, s.ExpiresAt = t0, t0.Add(lease), t0.Add(lease+spol.StreamTTL)
	return s
}

func versionsStream() *Stream {
	s := idleStream()
	s.Mode, s.HighWater = Versions, 1000
	return s
}

func sclaim(seq int64) ClaimStreamParams {
	return ClaimStreamParams{Consumer: "c", Stream: "order-42", Sequence: seq, Owner: "w-new", Digest: digA, Policy: spol}
}

// acquired is what a claim of seq by sclaim makes of base at time at.
func acquiredStream(base *Stream, seq, token int64, at time.Time) *Stream {
	s := *base
	s.InFlight, s.FencingToken, s.Digest, s.Owner = seq, token, digA, "w-new"
	s.UpdatedAt, s.LeaseExpiresAt = at, at.Add(spol.DefaultLeaseTTL)
	s.ExpiresAt = s.LeaseExpiresAt.Add(spol.StreamTTL)
	return &s
}

// finishedAt is inFlightStream after its event 5 finished at t0+1s.
func finishedAt(outcome State, rej *Rejection) *Stream {
	s := inFlightStream()
	at := t0.Add(time.Second)
	s.HighWater, s.LastOutcome, s.LastRejection, s.FinishedToken = 5, outcome, rej, 7
	s.InFlight, s.Digest, s.Owner = 0, nil, ""
	s.UpdatedAt, s.LeaseExpiresAt, s.ExpiresAt = at, at, at.Add(spol.StreamTTL)
	if outcome == Rejected {
		s.Rejected = 1
	}
	return s
}

func TestApplyStream(t *testing.T) {
	poison := Rejection{Reason: "BAD_EVENT", Message: "cannot parse", Detail: []byte{1}}
	late := t0.Add(lease + time.Second)
	tests := []struct {
		name    string
		stored  *Stream
		cmd     StreamCommand
		now     time.Time
		want    *Stream // nil: refused
		write   bool
		outcome StreamOutcome
		err     error
		expect  int64 // Expected of a gap
	}{
		// The table, row by row.
		{name: "n below the mark is a duplicate", stored: inFlightStream(), cmd: sclaim(3), now: t0,
			want: inFlightStream(), outcome: StreamDuplicate},
		{name: "n at the mark is a duplicate", stored: idleStream(), cmd: sclaim(4), now: t0,
			want: idleStream(), outcome: StreamDuplicate},
		{name: "a live lease is in progress", stored: inFlightStream(), cmd: sclaim(5), now: t0.Add(time.Second),
			want: inFlightStream(), outcome: StreamInProgress},
		{name: "a live lease is in progress even for a later n", stored: inFlightStream(), cmd: sclaim(9), now: t0,
			want: inFlightStream(), outcome: StreamInProgress},
		{name: "mark + 1 is acquired", stored: idleStream(), cmd: sclaim(5), now: t0,
			want: acquiredStream(idleStream(), 5, 7, t0), write: true, outcome: StreamAcquired},
		{name: "an expired lease is taken over with a greater token", stored: inFlightStream(), cmd: sclaim(5), now: late,
			want: acquiredStream(inFlightStream(), 5, 8, late), write: true, outcome: StreamAcquired},
		{name: "past mark + 1 is a gap", stored: idleStream(), cmd: sclaim(7), now: t0,
			err: ErrSequenceGap, expect: 5},
		{name: "a gap after an expired lease", stored: inFlightStream(), cmd: sclaim(6), now: late,
			err: ErrSequenceGap, expect: 5},
		// New streams.
		{name: "a new stream acquires 1", stored: nil, cmd: sclaim(1), now: t0,
			want:  acquiredStream(&Stream{Consumer: "c", Stream: "order-42", Mode: Dense, CreatedAt: t0}, 1, 1, t0),
			write: true, outcome: StreamAcquired},
		{name: "a new stream refuses 2", stored: nil, cmd: sclaim(2), now: t0, err: ErrSequenceGap, expect: 1},
		{name: "a new stream starts at its first claim when the policy says so", stored: nil,
			cmd: withPolicy(sclaim(9), StreamPolicy{Start: StartAtFirstClaim}), now: t0,
			want:  acquiredStream(&Stream{Consumer: "c", Stream: "order-42", Mode: Dense, CreatedAt: t0}, 9, 1, t0),
			write: true, outcome: StreamAcquired},
		{name: "a forgotten stream is new again, its token counting on", stored: idleStream(), cmd: sclaim(1),
			now:   t0.Add(spol.StreamTTL),
			want:  acquiredStream(&Stream{Consumer: "c", Stream: "order-42", Mode: Dense, CreatedAt: t0.Add(spol.StreamTTL)}, 1, 7, t0.Add(spol.StreamTTL)),
			write: true, outcome: StreamAcquired},
		{name: "a forgotten stream refuses an old event as a gap", stored: idleStream(), cmd: sclaim(3),
			now: t0.Add(spol.StreamTTL), err: ErrSequenceGap, expect: 1},
		// Digests.
		{name: "the in-flight sequence with another digest", stored: inFlightStream(), cmd: withDigest(sclaim(5), digB),
			now: t0, err: ErrDigestMismatch},
		{name: "another digest after the lease ran out too", stored: inFlightStream(), cmd: withDigest(sclaim(5), digB),
			now: late, err: ErrDigestMismatch},
		{name: "no digest is no mismatch", stored: inFlightStream(), cmd: withDigest(sclaim(5), nil), now: t0,
			want: inFlightStream(), outcome: StreamInProgress},
		// Modes.
		{name: "versions acquires any n above the mark", stored: versionsStream(), cmd: sclaim(5000), now: t0,
			want: acquiredStream(versionsStream(), 5000, 7, t0), write: true, outcome: StreamAcquired},
		{name: "versions: a lower n is superseded", stored: versionsStream(), cmd: sclaim(999), now: t0,
			want: versionsStream(), outcome: StreamDuplicate},
		{name: "a claim naming another mode", stored: versionsStream(), cmd: withMode(sclaim(5000), Dense), now: t0,
			err: ErrModeMismatch},
		{name: "a claim against the policy's mode", stored: nil,
			cmd: withPolicy(withMode(sclaim(1), Versions), StreamPolicy{Mode: Dense}), now: t0, err: ErrModeMismatch},
		{name: "the policy's mode fixes a new stream's", stored: nil, cmd: withPolicy(sclaim(77), StreamPolicy{Mode: Versions}), now: t0,
			want:  acquiredStream(&Stream{Consumer: "c", Stream: "order-42", Mode: Versions, CreatedAt: t0}, 77, 1, t0),
			write: true, outcome: StreamAcquired},
		// Finishing.
		{name: "complete moves the mark", stored: inFlightStream(),
			cmd: CompleteStreamParams{Sequence: 5, FencingToken: 7, Policy: spol}, now: t0.Add(time.Second),
			want: finishedAt(Completed, nil), write: true},
		{name: "complete repeated is harmless", stored: finishedAt(Completed, nil),
			cmd: CompleteStreamParams{Sequence: 5, FencingToken: 7, Policy: spol}, now: t0.Add(time.Hour),
			want: finishedAt(Completed, nil)},
		{name: "complete after a reject of the same claim", stored: finishedAt(Rejected, &poison),
			cmd: CompleteStreamParams{Sequence: 5, FencingToken: 7, Policy: spol}, now: t0, err: ErrAlreadyFinished},
		{name: "complete with a stale token", stored: acquiredStream(inFlightStream(), 5, 8, late),
			cmd: CompleteStreamParams{Sequence: 5, FencingToken: 7, Policy: spol}, now: late, err: ErrLeaseLost},
		{name: "complete of another sequence", stored: inFlightStream(),
			cmd: CompleteStreamParams{Sequence: 6, FencingToken: 7, Policy: spol}, now: t0, err: ErrLeaseLost},
		{name: "complete of a forgotten stream", stored: nil,
			cmd: CompleteStreamParams{Sequence: 5, FencingToken: 7, Policy: spol}, now: t0, err: ErrLeaseLost},
		{name: "a poison event moves the mark past it and is recorded", stored: inFlightStream(),
			cmd: RejectStreamParams{Sequence: 5, FencingToken: 7, Rejection: poison, Policy: spol}, now: t0.Add(time.Second),
			want: finishedAt(Rejected, &poison), write: true},
		{name: "reject repeated is harmless", stored: finishedAt(Rejected, &poison),
			cmd: RejectStreamParams{Sequence: 5, FencingToken: 7, Rejection: poison, Policy: spol}, now: t0,
			want: finishedAt(Rejected, &poison)},
		{name: "release frees the claim, not the mark", stored: inFlightStream(),
			cmd: ReleaseStreamParams{Sequence: 5, FencingToken: 7, Policy: spol}, now: t0.Add(time.Second),
			want: releasedStream(), write: true},
		{name: "release repeated is harmless", stored: releasedStream(),
			cmd: ReleaseStreamParams{Sequence: 5, FencingToken: 7, Policy: spol}, now: t0, want: releasedStream()},
		{name: "release of a finished claim", stored: finishedAt(Completed, nil),
			cmd: ReleaseStreamParams{Sequence: 5, FencingToken: 7, Policy: spol}, now: t0, err: ErrAlreadyFinished},
		{name: "release of the next sequence with a token that finished one", stored: finishedAt(Completed, nil),
			cmd: ReleaseStreamParams{Sequence: 6, FencingToken: 7, Policy: spol}, now: t0, err: ErrLeaseLost},
		{name: "an existing stream keeps its mode when the policy changes", stored: versionsStream(),
			cmd: withPolicy(sclaim(5000), StreamPolicy{Mode: Dense}), now: t0,
			want: acquiredStream(versionsStream(), 5000, 7, t0), write: true, outcome: StreamAcquired},
		// Admin.
		{name: "reset moves the mark back and drops the claim", stored: inFlightStream(),
			cmd: ResetStreamParams{HighWater: 2, Policy: spol}, now: t0.Add(time.Second), want: resetStream(2), write: true},
		{name: "a dry run writes nothing", stored: inFlightStream(),
			cmd: ResetStreamParams{HighWater: 2, DryRun: true, Policy: spol}, now: t0.Add(time.Second), want: resetStream(2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := cloneStream(tc.stored)
			d, err := ApplyStream(tc.stored, tc.cmd, tc.now)
			if !reflect.DeepEqual(tc.stored, before) {
				t.Fatalf("ApplyStream changed its input")
			}
			if tc.want == nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				var conflict *StreamConflictError
				if errors.As(err, &conflict) && conflict.Expected != tc.expect {
					t.Fatalf("expected sequence %d, want %d", conflict.Expected, tc.expect)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if d.Write != tc.write || d.Outcome != tc.outcome {
				t.Fatalf("write %v outcome %v, want %v %v", d.Write, d.Outcome, tc.write, tc.outcome)
			}
			if !reflect.DeepEqual(d.Stream, *tc.want) {
				t.Fatalf("stream\n got %+v\nwant %+v", d.Stream, *tc.want)
			}
			if d.Outcome == StreamInProgress && d.RetryAfter != tc.want.LeaseExpiresAt.Sub(tc.now) {
				t.Fatalf("retry after %v", d.RetryAfter)
			}
		})
	}
}

func releasedStream() *Stream {
	s := inFlightStream()
	at := t0.Add(time.Second)
	s.InFlight, s.Digest, s.Owner = 0, nil, ""
	s.UpdatedAt, s.LeaseExpiresAt, s.ExpiresAt = at, at, at.Add(spol.StreamTTL)
	return s
}

func resetStream(mark int64) *Stream {
	s := releasedStream()
	s.HighWater, s.FencingToken, s.LastOutcome, s.FinishedToken = mark, 8, "", 0
	return s
}

func withPolicy(c ClaimStreamParams, p StreamPolicy) ClaimStreamParams {
	p.DefaultLeaseTTL, p.StreamTTL = spol.DefaultLeaseTTL, spol.StreamTTL
	c.Policy = p
	return c
}

func withDigest(c ClaimStreamParams, d []byte) ClaimStreamParams { c.Digest = d; return c }
func withMode(c ClaimStreamParams, m StreamMode) ClaimStreamParams {
	c.Mode = m
	return c
}

func cloneStream(s *Stream) *Stream {
	if s == nil {
		return nil
	}
	c := *s
	c.Digest = append([]byte(nil), s.Digest...)
	if s.Digest == nil {
		c.Digest = nil
	}
	if s.LastRejection != nil {
		r := *s.LastRejection
		c.LastRejection = &r
	}
	return &c
}
