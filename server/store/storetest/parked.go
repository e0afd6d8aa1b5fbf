package storetest

import (
	"bytes"
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
	// A hand-out under a live lease is nobody else's.
	live := sacquire(t, s, sclaimP("live", 1))
	park(t, s, parkP("live", 2, "two"))
	completeNext(t, s, live, longTTL)
	cp := store.ClaimParkedParams{Consumer: consumer, Owner: "pickup", LeaseTTL: time.Minute, Policy: streamPolicy()}
	if r, err := s.ClaimParked(t.Context(), cp); err != nil || r.Event != nil {
		t.Fatalf("ClaimParked while the hand-out's lease is live: %+v, %v", r.Event, err)
	}
	held := sacquire(t, s, sclaimP("o", 1))
	park(t, s, parkP("o", 2, "two"))
	park(t, s, parkP("o", 3, "three"))
	st, lost := completeNext(t, s, held, shortTTL) // this reply is lost
	wantHandedOut(t, lost, st, 2, "two")
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
