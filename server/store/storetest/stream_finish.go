package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func streamFinishTests() []streamTest {
	return []streamTest{
		{"CompleteRepeatedIsHarmless", testStreamCompleteRepeated},
		{"StaleTokens", testStreamStaleTokens},
		{"PoisonEventSkipped", testStreamPoison},
		{"ReleaseKeepsMark", testStreamRelease},
		{"ExtendLease", testStreamExtend},
		{"Retention", testStreamRetention},
	}
}

func testStreamCompleteRepeated(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("order-1", 1))
	done := scomplete(t, s, held)
	next := sacquire(t, s, sclaimP("order-1", 2))
	// A retry of the first Complete, say after a lost reply, is harmless
	// even once the next event is in flight.
	again, err := s.CompleteStream(t.Context(), scompleteP(held))
	if err != nil || again.Stream.HighWater != 1 {
		t.Fatalf("repeated Complete: %+v, %v", again, err)
	}
	wantStreamUnchanged(t, s, next)
	_ = done
}

func testStreamStaleTokens(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("order-1", 1))
	for name, p := range map[string]store.CompleteStreamParams{
		"older token":    {Consumer: consumer, Stream: "order-1", Sequence: 1, FencingToken: held.FencingToken - 1},
		"future token":   {Consumer: consumer, Stream: "order-1", Sequence: 1, FencingToken: held.FencingToken + 1},
		"other sequence": {Consumer: consumer, Stream: "order-1", Sequence: 2, FencingToken: held.FencingToken},
		"absent stream":  {Consumer: consumer, Stream: "order-9", Sequence: 1, FencingToken: 1},
	} {
		p.Policy = streamPolicy()
		_, err := s.CompleteStream(t.Context(), p)
		if !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("%s: %v, want ErrLeaseLost", name, err)
		}
	}
	rp := store.ReleaseStreamParams{Consumer: consumer, Stream: "order-1", Sequence: 1,
		FencingToken: held.FencingToken + 1, Policy: streamPolicy()}
	_, err := s.ReleaseStream(t.Context(), rp)
	wantStreamErr(t, err, store.ErrLeaseLost)
	wantStreamUnchanged(t, s, held)
}

func testStreamPoison(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("order-1", 1))
	rej := store.Rejection{Reason: "UNPARSEABLE", Message: "bad payload", Detail: binary(40)}
	p := store.RejectStreamParams{Consumer: consumer, Stream: "order-1", Sequence: 1,
		FencingToken: held.FencingToken, Rejection: rej, Policy: streamPolicy()}
	r, err := s.RejectStream(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Stream
	if st.HighWater != 1 || st.LastOutcome != store.Rejected || st.Rejected != 1 ||
		!sameRejection(st.LastRejection, &rej) {
		t.Fatalf("after the poison event: %+v", st)
	}
	if again, err := s.RejectStream(t.Context(), p); err != nil || again.Stream.Rejected != 1 {
		t.Fatalf("repeated Reject: %+v, %v", again, err)
	}
	_, err = s.CompleteStream(t.Context(), scompleteP(held))
	wantStreamErr(t, err, store.ErrAlreadyFinished)
	wantStreamUnchanged(t, s, st)
	sclaim(t, s, sclaimP("order-1", 1), store.StreamDuplicate)
	sacquire(t, s, sclaimP("order-1", 2)) // the stream is not blocked
}

func testStreamRelease(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("order-1", 1))
	p := store.ReleaseStreamParams{Consumer: consumer, Stream: "order-1", Sequence: 1,
		FencingToken: held.FencingToken, Policy: streamPolicy()}
	st, err := s.ReleaseStream(t.Context(), p)
	if err != nil || st.InFlight != 0 || st.HighWater != 0 {
		t.Fatalf("release: %+v, %v", st, err)
	}
	if _, err := s.ReleaseStream(t.Context(), p); err != nil {
		t.Fatalf("repeated release: %v", err)
	}
	again := sacquire(t, s, sclaimP("order-1", 1))
	if again.FencingToken != held.FencingToken+1 {
		t.Fatalf("reclaim token %d, want %d", again.FencingToken, held.FencingToken+1)
	}
	_, err = s.ReleaseStream(t.Context(), p) // the old holder, once someone else claimed
	wantStreamErr(t, err, store.ErrLeaseLost)
}

func testStreamExtend(t *testing.T, s store.StreamStore) {
	p := sclaimP("order-1", 1)
	p.LeaseTTL = shortTTL
	held := sacquire(t, s, p)
	st, err := s.ExtendStreamLease(t.Context(), store.ExtendStreamLeaseParams{Consumer: consumer, Stream: "order-1",
		Sequence: 1, FencingToken: held.FencingToken, LeaseTTL: longTTL, Policy: streamPolicy()})
	if err != nil || !st.LeaseExpiresAt.After(held.LeaseExpiresAt) {
		t.Fatalf("extend: %+v, %v", st, err)
	}
	sleepPast(shortTTL)
	p.Owner = "worker-2"
	sclaim(t, s, p, store.StreamInProgress) // the extension holds
}

// Retention: an idle stream is forgotten after its TTL. A late event of a
// dense stream is then refused as a gap (the new stream expects 1), and the
// fencing token keeps counting until the reaper deletes the row.
func testStreamRetention(t *testing.T, s store.StreamStore) {
	p := sclaimP("order-1", 1)
	p.Policy.StreamTTL = shortTTL
	held := sacquire(t, s, p)
	c := scompleteP(held)
	c.Policy.StreamTTL = shortTTL
	if _, err := s.CompleteStream(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	advance(t, s, "order-live", 1)
	sleepPast(shortTTL)
	if _, err := s.GetStream(t.Context(), consumer, "order-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("forgotten stream: %v, want ErrNotFound", err)
	}
	_, err := s.ClaimStream(t.Context(), sclaimP("order-1", 2))
	wantGap(t, err, 1) // a late event of a forgotten stream
	again := sacquire(t, s, sclaimP("order-1", 1))
	if again.FencingToken <= held.FencingToken || again.HighWater != 0 {
		t.Fatalf("reclaimed forgotten stream %+v after %+v", again, held)
	}
	// Only expired rows go: the live one and the reclaimed one stay.
	p = sclaimP("order-2", 1)
	p.Policy.StreamTTL, p.LeaseTTL = shortTTL, shortTTL
	sacquire(t, s, p)
	sleepPast(2 * shortTTL)
	if n, err := s.DeleteExpiredStreams(t.Context(), 10); err != nil || n != 1 {
		t.Fatalf("DeleteExpiredStreams = %d, %v; want 1", n, err)
	}
	getStream(t, s, "order-live")
	getStream(t, s, "order-1")
}

func streamAdminTests() []streamTest {
	return []streamTest{
		{"ResetAndDryRun", testStreamReset},
		{"ListPagesAndFilters", testStreamList},
		{"Policies", testStreamPolicies},
		{"Stats", testStreamStats},
	}
}

func testStreamReset(t *testing.T, s store.StreamStore) {
	advance(t, s, "order-1", 3)
	held := sacquire(t, s, sclaimP("order-1", 4))
	rp := store.ResetStreamParams{Consumer: consumer, Stream: "order-1", HighWater: 1, DryRun: true, Policy: streamPolicy()}
	preview, err := s.ResetStream(t.Context(), rp)
	if err != nil || preview.HighWater != 1 || preview.InFlight != 0 {
		t.Fatalf("dry run: %+v, %v", preview, err)
	}
	wantStreamUnchanged(t, s, held)
	rp.DryRun = false
	st, err := s.ResetStream(t.Context(), rp)
	if err != nil || st.HighWater != 1 || st.FencingToken <= held.FencingToken {
		t.Fatalf("reset: %+v, %v", st, err)
	}
	_, err = s.CompleteStream(t.Context(), scompleteP(held))
	wantStreamErr(t, err, store.ErrLeaseLost)
	sacquire(t, s, sclaimP("order-1", 2)) // the event after the new mark runs again
	// Advancing a stream that has none creates it.
	rp = store.ResetStreamParams{Consumer: consumer, Stream: "order-9", HighWater: 100, Policy: streamPolicy()}
	if _, err := s.ResetStream(t.Context(), rp); err != nil {
		t.Fatal(err)
	}
	sclaim(t, s, sclaimP("order-9", 100), store.StreamDuplicate)
	sacquire(t, s, sclaimP("order-9", 101))
}

func testStreamList(t *testing.T, s store.StreamStore) {
	const n = 7
	for i := range n {
		p := sclaimP(fmt.Sprintf("s-%d", i), 1)
		if i%3 == 0 {
			p.LeaseTTL = shortTTL // these become the reconciliation queue
		}
		sacquire(t, s, p)
	}
	sleepPast(shortTTL)
	var seen []string
	after := ""
	for {
		page, err := s.ListStreams(t.Context(), store.ListStreamsParams{Consumer: consumer, AfterStream: after, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, st := range page {
			seen = append(seen, st.Stream)
		}
		after = page[len(page)-1].Stream
	}
	if fmt.Sprint(seen) != "[s-0 s-1 s-2 s-3 s-4 s-5 s-6]" {
		t.Fatalf("paged %v", seen)
	}
	expired, err := s.ListStreams(t.Context(), store.ListStreamsParams{Consumer: consumer, LeaseExpired: true, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, st := range expired {
		names = append(names, st.Stream)
	}
	if fmt.Sprint(names) != "[s-0 s-3 s-6]" {
		t.Fatalf("lease-expired filter gave %v", names)
	}
	if other, err := s.ListStreams(t.Context(), store.ListStreamsParams{Consumer: "other", Limit: 10}); err != nil || len(other) != 0 {
		t.Fatalf("another consumer sees %v, %v", other, err)
	}
}

func testStreamPolicies(t *testing.T, s store.StreamStore) {
	if _, err := s.GetStreamPolicy(t.Context(), consumer); !errors.Is(err, store.ErrNoPolicy) {
		t.Fatalf("no policy yet: %v", err)
	}
	want := store.ConsumerStreamPolicy{Consumer: consumer, StreamTTL: 90 * 24 * time.Hour,
		Mode: store.Versions, Start: store.StartAtFirstClaim,
		MaxParked: 50, GapTimeout: 90 * time.Second, OnGapTimeout: store.GapSkip}
	put, err := s.PutStreamPolicy(t.Context(), want)
	if err != nil || put.UpdatedAt.IsZero() {
		t.Fatalf("put: %+v, %v", put, err)
	}
	got, err := s.GetStreamPolicy(t.Context(), consumer)
	want.UpdatedAt = put.UpdatedAt
	if err != nil || got != want {
		t.Fatalf("get: %+v, %v; want %+v", got, err, want)
	}
	if _, err := s.DeleteStreamPolicy(t.Context(), consumer); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DeleteStreamPolicy(t.Context(), consumer); !errors.Is(err, store.ErrNoPolicy) {
		t.Fatalf("second delete: %v", err)
	}
}
