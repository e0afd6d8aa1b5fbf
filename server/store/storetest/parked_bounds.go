package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The park group's bounds, gap timeouts, listings, admin calls and
// retention (the group itself is parkTests, in parked.go).

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
