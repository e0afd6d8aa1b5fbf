package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The park-mode group: every row of ApplyStreamParked's table on a real
// store, the hand-off in the write that moves the mark, pickup after a lost
// reply or a crash, the bounds, the gap timeout and the admin calls.
func parkTests() []streamTest {
	return []streamTest{
		{"ParkThenReleaseInOrder", testParkRelease},
		{"ParkAgainIsIdempotent", testParkIdempotent},
		{"ParkAgainWithOtherDigest", testParkDigestMismatch},
		{"ParkAtOrBelowMarkAndNext", testParkAtMark},
		{"RepeatedCompleteHandsOutSameNext", testParkRepeatedComplete},
		{"RejectHandsOutNext", testParkReject},
		{"ClaimParkedAfterLeaseRunsOut", testClaimParkedAfterExpiry},
		{"ClaimParkedFindsNothingReady", testClaimParkedNothing},
		{"MaxParkedIsParkFull", testParkMaxParked},
		{"ByteBudgetIsParkFull", testParkByteBudget},
		{"GapTimeoutHold", testGapTimeoutHold},
		{"GapTimeoutSkip", testGapTimeoutSkip},
		{"ListParkedPages", testListParkedPages},
		{"DropParkedWithDryRun", testDropParked},
		{"SkipGapByAdminWithDryRun", testSkipGapAdmin},
		{"ResetDropsParkedAtOrBelow", testParkReset},
		{"ParkedEventsGoWithTheirStream", testParkedRetention},
	}
}

func parkP(stream string, seq int64, payload string) store.ClaimStreamParams {
	p := sclaimP(stream, seq)
	p.Park, p.Payload = true, []byte(payload)
	return p
}

// park parks seq and checks the answer.
func park(t *testing.T, s store.StreamStore, p store.ClaimStreamParams) store.Stream {
	t.Helper()
	return sclaim(t, s, p, store.StreamParked).Stream
}

// completeNext completes held and returns the event it hands out.
func completeNext(t *testing.T, s store.StreamStore, held store.Stream, nextTTL time.Duration) (store.Stream, *store.HandedOut) {
	t.Helper()
	p := scompleteP(held)
	p.NextLeaseTTL = nextTTL
	r, err := s.CompleteStream(t.Context(), p)
	if err != nil {
		t.Fatalf("CompleteStream(%d): %v", held.InFlight, err)
	}
	return r.Stream, r.Next
}

// wantHandedOut checks a hand-out of seq with payload, as the stream's
// claim in flight.
func wantHandedOut(t *testing.T, h *store.HandedOut, st store.Stream, seq int64, payload string) {
	t.Helper()
	switch {
	case h == nil:
		t.Fatalf("no event handed out; want %d (stream %+v)", seq, st)
	case h.Event.Sequence != seq || !bytes.Equal(h.Event.Payload, []byte(payload)) || h.Event.PayloadBytes != int64(len(payload)):
		t.Fatalf("handed out %d %q (%d bytes); want %d %q", h.Event.Sequence, h.Event.Payload, h.Event.PayloadBytes, seq, payload)
	case st.InFlight != seq || st.HighWater != seq-1 || st.FencingToken != h.FencingToken ||
		!st.LeaseExpiresAt.Equal(h.LeaseExpiresAt) || st.Owner != h.Owner:
		t.Fatalf("hand-out %+v is not the stream's claim %+v", h, st)
	}
}

// heldAs is the stream as its holder would pass it on: InFlight and the
// token of the hand-out.
func heldAs(st store.Stream, h *store.HandedOut) store.Stream {
	st.InFlight, st.FencingToken = h.Event.Sequence, h.FencingToken
	return st
}

func parkedSeqs(t *testing.T, s store.StreamStore, stream string) []int64 {
	t.Helper()
	evs, err := s.ListParked(t.Context(), store.ListParkedParams{Consumer: consumer, Stream: stream, Limit: 1000})
	if err != nil {
		t.Fatalf("ListParked(%q): %v", stream, err)
	}
	var out []int64
	for _, ev := range evs {
		out = append(out, ev.Sequence)
	}
	return out
}

func wantParked(t *testing.T, s store.StreamStore, stream string, want ...int64) {
	t.Helper()
	got := parkedSeqs(t, s, stream)
	st := getStream(t, s, stream)
	if !slices.Equal(got, want) || st.Parked != int64(len(want)) {
		t.Fatalf("parked %v, stream counts %d; want %v", got, st.Parked, want)
	}
}

func testParkRelease(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("o", 1))
	park(t, s, parkP("o", 3, "third"))
	st := park(t, s, parkP("o", 2, "second"))
	if st.Parked != 2 || st.ParkedBytes != int64(len("third")+len("second")) || st.InFlight != 1 {
		t.Fatalf("after two parks: %+v", st)
	}
	sum, err := s.GetParkedSummary(t.Context(), consumer, "o")
	if err != nil || sum.Count != 2 || sum.Lowest != 2 || sum.Highest != 3 || sum.OldestParkedAt.IsZero() || !sum.GapOpen {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	st, next := completeNext(t, s, held, time.Minute)
	wantHandedOut(t, next, st, 2, "second")
	if left := time.Until(next.LeaseExpiresAt); left <= 0 || left > time.Minute+time.Second {
		t.Fatalf("hand-out lease runs out in %v; want the minute asked for", left)
	}
	if sum, _ := s.GetParkedSummary(t.Context(), consumer, "o"); sum.GapOpen {
		t.Fatalf("gap still open while 2 is handed out: %+v", sum)
	}
	st, next = completeNext(t, s, heldAs(st, next), 0)
	wantHandedOut(t, next, st, 3, "third")
	st, next = completeNext(t, s, heldAs(st, next), 0)
	if next != nil || st.HighWater != 3 || st.InFlight != 0 || st.Parked != 0 || st.ParkedBytes != 0 {
		t.Fatalf("after the last parked event: %+v, next %+v", st, next)
	}
	wantParked(t, s, "o")
	sclaim(t, s, parkP("o", 2, "second"), store.StreamDuplicate)
}

func testParkIdempotent(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("o", 1))
	p := parkP("o", 3, "first copy")
	p.Digest = []byte("d3")
	before := park(t, s, p)
	p.Payload = []byte("second copy")
	again := park(t, s, p)
	if again.Parked != 1 || again.ParkedBytes != before.ParkedBytes {
		t.Fatalf("re-park counted again: %+v", again)
	}
	wantStreamUnchanged(t, s, before)
	scomplete(t, s, held)
	st, next := completeNext(t, s, sacquire(t, s, sclaimP("o", 2)), 0)
	wantHandedOut(t, next, st, 3, "first copy") // the first payload is the one kept
}

func testParkDigestMismatch(t *testing.T, s store.StreamStore) {
	p := parkP("o", 3, "x")
	p.Digest = []byte("digest-a")
	before := park(t, s, p)
	p.Digest = []byte("digest-b")
	_, err := s.ClaimStream(t.Context(), p)
	wantStreamErr(t, err, store.ErrDigestMismatch)
	wantStreamUnchanged(t, s, before)
	// Without park, a claim of the parked sequence is held to its digest
	// too, also once it is handed out.
	advance(t, s, "o", 1)
	completeNext(t, s, sacquire(t, s, sclaimP("o", 2)), 0)
	q := sclaimP("o", 3)
	q.Digest = []byte("digest-b")
	_, err = s.ClaimStream(t.Context(), q)
	wantStreamErr(t, err, store.ErrDigestMismatch)
}

func testParkAtMark(t *testing.T, s store.StreamStore) {
	advance(t, s, "o", 2)
	sclaim(t, s, parkP("o", 2, "old"), store.StreamDuplicate)
	sclaim(t, s, parkP("o", 1, "older"), store.StreamDuplicate)
	st := sacquire(t, s, parkP("o", 3, "next")) // mark + 1 is claimed, not parked
	if st.Parked != 0 {
		t.Fatalf("mark + 1 was parked: %+v", st)
	}
	// Past mark + 1 while 3 is leased: parked, not in progress.
	park(t, s, parkP("o", 4, "later"))
	// A VERSIONS stream has no gaps: park has no effect there.
	vp := parkP("v", 7, "x")
	vp.Mode = store.Versions
	if st := sacquire(t, s, vp); st.Parked != 0 {
		t.Fatalf("a VERSIONS stream parked: %+v", st)
	}
}

func testParkRepeatedComplete(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("o", 1))
	park(t, s, parkP("o", 2, "two"))
	st, next := completeNext(t, s, held, time.Minute)
	wantHandedOut(t, next, st, 2, "two")
	// The reply was lost: the repeat hands out the same event, same token.
	again, next2 := completeNext(t, s, held, time.Minute)
	if next2 == nil || next2.FencingToken != next.FencingToken || !bytes.Equal(next2.Event.Payload, next.Event.Payload) {
		t.Fatalf("repeated Complete handed out %+v; want %+v", next2, next)
	}
	wantStreamUnchanged(t, s, again)
	// Once 2 is finished, the first Complete is stale.
	completeNext(t, s, heldAs(st, next), 0)
	_, err := s.CompleteStream(t.Context(), scompleteP(held))
	wantStreamErr(t, err, store.ErrLeaseLost)
}

func testParkReject(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("o", 1))
	park(t, s, parkP("o", 2, "two"))
	r, err := s.RejectStream(t.Context(), store.RejectStreamParams{Consumer: consumer, Stream: "o", Sequence: 1,
		FencingToken: held.FencingToken, Rejection: terminal(), Policy: streamPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	wantHandedOut(t, r.Next, r.Stream, 2, "two")
	if r.Stream.Rejected != 1 || r.Stream.LastOutcome != store.Rejected {
		t.Fatalf("after rejecting 1: %+v", r.Stream)
	}
}

func testClaimParkedAfterExpiry(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("o", 1))
	park(t, s, parkP("o", 2, "two"))
	park(t, s, parkP("o", 3, "three"))
	st, lost := completeNext(t, s, held, shortTTL) // this reply is lost
	wantHandedOut(t, lost, st, 2, "two")
	cp := store.ClaimParkedParams{Consumer: consumer, Owner: "pickup", LeaseTTL: time.Minute, Policy: streamPolicy()}
	if r, err := s.ClaimParked(t.Context(), cp); err != nil || r.Event != nil {
		t.Fatalf("ClaimParked while the hand-out's lease is live: %+v, %v", r.Event, err)
	}
	sleepPast(shortTTL)
	r, err := s.ClaimParked(t.Context(), cp)
	if err != nil {
		t.Fatal(err)
	}
	wantHandedOut(t, r.Event, r.Stream, 2, "two")
	if r.Event.FencingToken != lost.FencingToken+1 || r.Event.Owner != "pickup" {
		t.Fatalf("pickup %+v after %+v", r.Event, lost)
	}
	_, err = s.CompleteStream(t.Context(), scompleteP(heldAs(st, lost)))
	wantStreamErr(t, err, store.ErrLeaseLost)
	st, next := completeNext(t, s, heldAs(r.Stream, r.Event), 0)
	wantHandedOut(t, next, st, 3, "three")
}

func testClaimParkedNothing(t *testing.T, s store.StreamStore) {
	park(t, s, parkP("o", 3, "x")) // waits on 1 and 2
	advance(t, s, "p", 1)
	for _, stream := range []string{"", "o", "p", "absent"} {
		r, err := s.ClaimParked(t.Context(), store.ClaimParkedParams{Consumer: consumer, Stream: stream, Policy: streamPolicy()})
		if err != nil || r.Event != nil {
			t.Fatalf("ClaimParked(%q) = %+v, %v; want nothing ready", stream, r.Event, err)
		}
	}
}

func testParkMaxParked(t *testing.T, s store.StreamStore) {
	pol := streamPolicy()
	pol.MaxParked = 2
	var st store.Stream
	for _, seq := range []int64{3, 4} {
		p := parkP("o", seq, "x")
		p.Policy = pol
		st = park(t, s, p)
	}
	p := parkP("o", 5, "x")
	p.Policy = pol
	_, err := s.ClaimStream(t.Context(), p)
	wantStreamErr(t, err, store.ErrParkFull)
	wantStreamUnchanged(t, s, st)
	wantParked(t, s, "o", 3, 4)
	p.Sequence = 4 // a re-park of one already parked is no new event
	park(t, s, p)
}

func testParkByteBudget(t *testing.T, s store.StreamStore) {
	pol := streamPolicy()
	pol.MaxParkedBytes = 10
	p := parkP("a", 3, "123456")
	p.Policy = pol
	park(t, s, p)
	q := parkP("b", 3, "123456") // another stream of the same consumer
	q.Policy = pol
	_, err := s.ClaimStream(t.Context(), q)
	wantStreamErr(t, err, store.ErrParkFull)
	if evs := parkedSeqs(t, s, "b"); len(evs) != 0 {
		t.Fatalf("refused park stored %v", evs)
	}
	q.Payload = []byte("1234")
	park(t, s, q)
}

func gapPolicy(action store.GapAction) store.StreamPolicy {
	p := streamPolicy()
	p.GapTimeout, p.OnGapTimeout = shortTTL, action
	return p
}

func listGaps(t *testing.T, s store.StreamStore) []store.OpenGap {
	t.Helper()
	gaps, err := s.ListOpenGaps(t.Context(), store.ListOpenGapsParams{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return gaps
}

func testGapTimeoutHold(t *testing.T, s store.StreamStore) {
	st := park(t, s, parkP("o", 3, "x"))
	// A stream whose next event is parked (handed out) has no open gap.
	held := sacquire(t, s, sclaimP("closed", 1))
	park(t, s, parkP("closed", 2, "ready"))
	completeNext(t, s, held, 0)
	sleepPast(shortTTL)
	_, err := s.SkipGap(t.Context(), store.SkipGapParams{Consumer: consumer, Stream: "o", Cause: store.SkipByGapTimeout,
		Policy: gapPolicy(store.GapHold)})
	wantStreamErr(t, err, store.ErrNoGap)
	wantStreamUnchanged(t, s, st)
	gaps := listGaps(t, s)
	if len(gaps) != 1 || gaps[0].Stream != "o" || gaps[0].Lowest != 3 || gaps[0].HighWater != 0 ||
		time.Since(gaps[0].OldestParkedAt) < shortTTL {
		t.Fatalf("open gaps %+v; want o waiting on 1 since before the timeout", gaps)
	}
}

func testGapTimeoutSkip(t *testing.T, s store.StreamStore) {
	advance(t, s, "o", 1)
	park(t, s, parkP("o", 4, "four"))
	park(t, s, parkP("o", 5, "five"))
	sp := store.SkipGapParams{Consumer: consumer, Stream: "o", Cause: store.SkipByGapTimeout, Policy: gapPolicy(store.GapSkip)}
	notDue := sp
	notDue.Policy.GapTimeout = longTTL
	_, err := s.SkipGap(t.Context(), notDue)
	wantStreamErr(t, err, store.ErrNoGap)
	sleepPast(shortTTL)
	r, err := s.SkipGap(t.Context(), sp)
	if err != nil {
		t.Fatal(err)
	}
	if r.Skipped.From != 2 || r.Skipped.To != 3 || r.Skipped.Cause != store.SkipByGapTimeout || r.Skipped.At.IsZero() ||
		r.Stream.HighWater != 3 || r.Stream.Skipped != 2 || r.Stream.LastSkipped == nil ||
		r.Stream.LastSkipped.From != 2 || r.Stream.LastSkipped.To != 3 {
		t.Fatalf("skip: %+v", r)
	}
	if got := getStream(t, s, "o"); got.LastSkipped == nil || !got.LastSkipped.At.Equal(r.Skipped.At) || got.Skipped != 2 {
		t.Fatalf("stored skip %+v", got)
	}
	if gaps := listGaps(t, s); len(gaps) != 0 {
		t.Fatalf("gaps after the skip: %+v", gaps)
	}
	sclaim(t, s, sclaimP("o", 3), store.StreamDuplicate) // given up: never processed
	c, err := s.ClaimParked(t.Context(), store.ClaimParkedParams{Consumer: consumer, Owner: "w", Policy: streamPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	wantHandedOut(t, c.Event, c.Stream, 4, "four")
	st, next := completeNext(t, s, heldAs(c.Stream, c.Event), 0)
	wantHandedOut(t, next, st, 5, "five")
}

func testListParkedPages(t *testing.T, s store.StreamStore) {
	for seq := int64(8); seq >= 3; seq-- {
		park(t, s, parkP("o", seq, fmt.Sprintf("payload %d", seq)))
	}
	var got []int64
	after := int64(0)
	for page := 0; ; page++ {
		evs, err := s.ListParked(t.Context(), store.ListParkedParams{Consumer: consumer, Stream: "o", AfterSequence: after, Limit: 4})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Payload != nil || ev.PayloadBytes != int64(len("payload 3")) || ev.ParkedAt.IsZero() {
				t.Fatalf("listed %+v; want no payload, its size and when it was parked", ev)
			}
			got = append(got, ev.Sequence)
		}
		after = evs[len(evs)-1].Sequence
		if page > 3 {
			t.Fatal("paging does not end")
		}
	}
	if !slices.Equal(got, []int64{3, 4, 5, 6, 7, 8}) {
		t.Fatalf("pages listed %v", got)
	}
	if evs, err := s.ListParked(t.Context(), store.ListParkedParams{Consumer: consumer, Stream: "absent", Limit: 4}); err != nil || len(evs) != 0 {
		t.Fatalf("absent stream: %v, %v", evs, err)
	}
}

func testDropParked(t *testing.T, s store.StreamStore) {
	for _, seq := range []int64{3, 4, 5} {
		park(t, s, parkP("o", seq, "xx"))
	}
	before := getStream(t, s, "o")
	dp := store.DropParkedParams{Consumer: consumer, Stream: "o", From: 4, DryRun: true, Policy: streamPolicy()}
	r, err := s.DropParked(t.Context(), dp)
	if err != nil || r.Dropped != 2 || r.Stream.Parked != 1 {
		t.Fatalf("dry run: %+v, %v", r, err)
	}
	wantStreamUnchanged(t, s, before)
	dp.DryRun = false
	if r, err = s.DropParked(t.Context(), dp); err != nil || r.Dropped != 2 || r.Stream.ParkedBytes != 2 {
		t.Fatalf("drop: %+v, %v", r, err)
	}
	wantParked(t, s, "o", 3)
	_, err = s.DropParked(t.Context(), store.DropParkedParams{Consumer: consumer, Stream: "absent", Policy: streamPolicy()})
	wantStreamErr(t, err, store.ErrNotFound)
}

func testSkipGapAdmin(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("o", 1))
	park(t, s, parkP("o", 4, "four"))
	before := getStream(t, s, "o")
	sp := store.SkipGapParams{Consumer: consumer, Stream: "o", Cause: store.SkipByAdmin, DryRun: true, Policy: streamPolicy()}
	r, err := s.SkipGap(t.Context(), sp)
	if err != nil || r.Skipped.From != 1 || r.Skipped.To != 3 || r.Stream.HighWater != 3 {
		t.Fatalf("dry run: %+v, %v", r, err)
	}
	wantStreamUnchanged(t, s, before)
	sp.DryRun = false
	if r, err = s.SkipGap(t.Context(), sp); err != nil || r.Stream.HighWater != 3 || r.Stream.InFlight != 0 {
		t.Fatalf("skip: %+v, %v", r, err)
	}
	_, err = s.CompleteStream(t.Context(), scompleteP(held)) // the dropped claim
	wantStreamErr(t, err, store.ErrLeaseLost)
	_, err = s.SkipGap(t.Context(), sp) // 4 is ready: no gap left
	wantStreamErr(t, err, store.ErrNoGap)
	st := sacquire(t, s, sclaimP("o", 4)) // a claim of the ready event takes it
	if _, next := completeNext(t, s, st, 0); next != nil {
		t.Fatalf("handed out %+v", next)
	}
	wantParked(t, s, "o")
}

func testParkReset(t *testing.T, s store.StreamStore) {
	for _, seq := range []int64{3, 5, 7} {
		park(t, s, parkP("o", seq, "x"))
	}
	_, err := s.ResetStream(t.Context(), store.ResetStreamParams{Consumer: consumer, Stream: "o", HighWater: 5, Policy: streamPolicy()})
	if err != nil {
		t.Fatal(err)
	}
	wantParked(t, s, "o", 7)
}

func testParkedRetention(t *testing.T, s store.StreamStore) {
	pol := streamPolicy()
	pol.StreamTTL = shortTTL
	p := parkP("o", 3, "x")
	p.Policy = pol
	park(t, s, p)
	sleepPast(shortTTL)
	if _, err := s.GetParkedSummary(t.Context(), consumer, "o"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("summary of a forgotten stream: %v", err)
	}
	if evs := parkedSeqs(t, s, "o"); len(evs) != 0 {
		t.Fatalf("a forgotten stream lists parked %v", evs)
	}
	if r, err := s.ClaimParked(t.Context(), store.ClaimParkedParams{Consumer: consumer, Policy: streamPolicy()}); err != nil || r.Event != nil {
		t.Fatalf("ClaimParked found %+v, %v in a forgotten stream", r.Event, err)
	}
	// Its new life starts empty, before and after the reaper.
	p.Payload = []byte("new life")
	st := park(t, s, p)
	if st.Parked != 1 || st.ParkedBytes != int64(len("new life")) {
		t.Fatalf("new life inherited parked events: %+v", st)
	}
	sleepPast(shortTTL)
	if n, err := s.DeleteExpiredStreams(t.Context(), 10); err != nil || n != 1 {
		t.Fatalf("DeleteExpiredStreams = %d, %v", n, err)
	}
	st = park(t, s, parkP("o", 4, "third life"))
	if st.Parked != 1 || st.FencingToken != 0 {
		t.Fatalf("after the reaper: %+v", st)
	}
	wantParked(t, s, "o", 4)
}
