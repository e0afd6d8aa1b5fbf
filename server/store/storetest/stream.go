package storetest

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func streamClaimTests() []streamTest {
	return []streamTest{
		{"NewStreamAcquiresOne", testStreamNewAcquiresOne},
		{"NewStreamRefusesLater", testStreamNewRefusesLater},
		{"NewStreamStartsAtFirstClaimByPolicy", testStreamStartAtFirstClaim},
		{"DuplicateAtOrBelowMark", testStreamDuplicate},
		{"InProgressWhileLeased", testStreamInProgress},
		{"NextSequenceAcquired", testStreamNext},
		{"GapRefusedWithExpected", testStreamGap},
		{"TakeoverAfterLease", testStreamTakeover},
		{"DigestMismatch", testStreamDigest},
		{"VersionsMode", testStreamVersions},
		{"ModeMismatch", testStreamModeMismatch},
	}
}

func streamPolicy() store.StreamPolicy {
	return store.StreamPolicy{DefaultLeaseTTL: longTTL, StreamTTL: time.Hour}
}

func sclaimP(stream string, seq int64) store.ClaimStreamParams {
	return store.ClaimStreamParams{Consumer: consumer, Stream: stream, Sequence: seq,
		Owner: "worker-1", Policy: streamPolicy()}
}

func scompleteP(st store.Stream) store.CompleteStreamParams {
	return store.CompleteStreamParams{Consumer: st.Consumer, Stream: st.Stream, Sequence: st.InFlight,
		FencingToken: st.FencingToken, Policy: streamPolicy()}
}

func sclaim(t *testing.T, s store.StreamStore, p store.ClaimStreamParams, want store.StreamOutcome) store.StreamClaimResult {
	t.Helper()
	res, err := s.ClaimStream(t.Context(), p)
	if err != nil {
		t.Fatalf("ClaimStream(%q, %d): %v", p.Stream, p.Sequence, err)
	}
	if res.Outcome != want {
		t.Fatalf("ClaimStream(%q, %d) = %v, want %v (stream %+v)", p.Stream, p.Sequence, res.Outcome, want, res.Stream)
	}
	checkStreamNormal(t, res.Stream)
	return res
}

func sacquire(t *testing.T, s store.StreamStore, p store.ClaimStreamParams) store.Stream {
	t.Helper()
	st := sclaim(t, s, p, store.StreamAcquired).Stream
	if st.InFlight != p.Sequence {
		t.Fatalf("acquired %d, but in flight is %d", p.Sequence, st.InFlight)
	}
	return st
}

func scomplete(t *testing.T, s store.StreamStore, held store.Stream) store.Stream {
	t.Helper()
	r, err := s.CompleteStream(t.Context(), scompleteP(held))
	if err != nil {
		t.Fatalf("CompleteStream(%q, %d): %v", held.Stream, held.InFlight, err)
	}
	st := r.Stream
	if st.HighWater != held.InFlight || st.InFlight != 0 {
		t.Fatalf("after completing %d: mark %d, in flight %d", held.InFlight, st.HighWater, st.InFlight)
	}
	return st
}

// advance claims and completes the next sequences of a dense stream up to
// mark, and returns the stream.
func advance(t *testing.T, s store.StreamStore, stream string, mark int64) store.Stream {
	t.Helper()
	var st store.Stream
	for seq := int64(1); seq <= mark; seq++ {
		st = scomplete(t, s, sacquire(t, s, sclaimP(stream, seq)))
	}
	return st
}

func getStream(t *testing.T, s store.StreamStore, stream string) store.Stream {
	t.Helper()
	st, err := s.GetStream(t.Context(), consumer, stream)
	if err != nil {
		t.Fatalf("GetStream(%q): %v", stream, err)
	}
	checkStreamNormal(t, st)
	return st
}

// wantStreamUnchanged: a refused or non-writing call changed nothing.
func wantStreamUnchanged(t *testing.T, s store.StreamStore, before store.Stream) {
	t.Helper()
	if got := getStream(t, s, before.Stream); !reflect.DeepEqual(got, before) {
		t.Fatalf("stream changed:\n got %+v\nwant %+v", got, before)
	}
}

func wantStreamErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error %v, want %v", err, target)
	}
}

// wantGap checks that err is a sequence gap expecting expected.
func wantGap(t *testing.T, err error, expected int64) {
	t.Helper()
	ce, ok := errors.AsType[*store.StreamConflictError](err)
	if !errors.Is(err, store.ErrSequenceGap) || !ok || ce.Expected != expected {
		t.Fatalf("error %v, want a sequence gap expecting %d", err, expected)
	}
}

func checkStreamNormal(t *testing.T, st store.Stream) {
	t.Helper()
	for name, tm := range map[string]time.Time{"CreatedAt": st.CreatedAt, "UpdatedAt": st.UpdatedAt,
		"LeaseExpiresAt": st.LeaseExpiresAt, "ExpiresAt": st.ExpiresAt} {
		if tm.IsZero() || tm != store.Now(tm) {
			t.Errorf("%s = %v: zero, or not UTC at microsecond precision", name, tm)
		}
	}
}

func testStreamNewAcquiresOne(t *testing.T, s store.StreamStore) {
	st := sacquire(t, s, sclaimP("order-1", 1))
	if st.HighWater != 0 || st.FencingToken != 1 || st.Mode != store.Dense || st.Owner != "worker-1" {
		t.Fatalf("new stream %+v; want mark 0, token 1, DENSE", st)
	}
	if got := getStream(t, s, "order-1"); !reflect.DeepEqual(got, st) {
		t.Fatalf("read back %+v, claim returned %+v", got, st)
	}
}

func testStreamNewRefusesLater(t *testing.T, s store.StreamStore) {
	_, err := s.ClaimStream(t.Context(), sclaimP("order-1", 2))
	wantGap(t, err, 1)
	if _, err := s.GetStream(t.Context(), consumer, "order-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused claim created the stream: %v", err)
	}
}

func testStreamStartAtFirstClaim(t *testing.T, s store.StreamStore) {
	p := sclaimP("order-1", 41)
	p.Policy.Start = store.StartAtFirstClaim
	scomplete(t, s, sacquire(t, s, p))
	// What the rule gives up: the earlier events are duplicates now.
	sclaim(t, s, sclaimP("order-1", 3), store.StreamDuplicate)
	sacquire(t, s, sclaimP("order-1", 42))
}

func testStreamDuplicate(t *testing.T, s store.StreamStore) {
	before := advance(t, s, "order-1", 3)
	for _, seq := range []int64{1, 3} {
		res := sclaim(t, s, sclaimP("order-1", seq), store.StreamDuplicate)
		if res.Stream.HighWater != 3 {
			t.Fatalf("duplicate carries mark %d, want 3", res.Stream.HighWater)
		}
	}
	wantStreamUnchanged(t, s, before)
}

func testStreamInProgress(t *testing.T, s store.StreamStore) {
	held := sacquire(t, s, sclaimP("order-1", 1))
	for _, seq := range []int64{1, 2} {
		p := sclaimP("order-1", seq)
		p.Owner = "worker-2"
		res := sclaim(t, s, p, store.StreamInProgress)
		if res.RetryAfter <= 0 || res.RetryAfter > longTTL {
			t.Fatalf("RetryAfter %v, want within (0, %v]", res.RetryAfter, longTTL)
		}
	}
	wantStreamUnchanged(t, s, held)
}

func testStreamNext(t *testing.T, s store.StreamStore) {
	done := advance(t, s, "order-1", 2)
	next := sacquire(t, s, sclaimP("order-1", 3))
	if next.FencingToken <= done.FencingToken || next.HighWater != 2 {
		t.Fatalf("next claim %+v after %+v", next, done)
	}
}

func testStreamGap(t *testing.T, s store.StreamStore) {
	before := advance(t, s, "order-1", 2)
	_, err := s.ClaimStream(t.Context(), sclaimP("order-1", 5))
	wantGap(t, err, 3)
	wantStreamUnchanged(t, s, before)
}

func testStreamTakeover(t *testing.T, s store.StreamStore) {
	p := sclaimP("order-1", 1)
	p.LeaseTTL = shortTTL
	old := sacquire(t, s, p)
	sleepPast(shortTTL)
	p.Owner, p.LeaseTTL = "worker-2", longTTL
	taken := sacquire(t, s, p)
	if taken.FencingToken <= old.FencingToken || taken.Owner != "worker-2" {
		t.Fatalf("takeover %+v after %+v", taken, old)
	}
	_, err := s.CompleteStream(t.Context(), scompleteP(old))
	wantStreamErr(t, err, store.ErrLeaseLost)
	wantStreamUnchanged(t, s, taken)
	scomplete(t, s, taken)
}

func testStreamDigest(t *testing.T, s store.StreamStore) {
	p := sclaimP("order-1", 1)
	p.Digest = digest1
	held := sacquire(t, s, p)
	p.Digest = digest2
	_, err := s.ClaimStream(t.Context(), p)
	wantStreamErr(t, err, store.ErrDigestMismatch)
	wantStreamUnchanged(t, s, held)
}

func testStreamVersions(t *testing.T, s store.StreamStore) {
	p := sclaimP("row-7", 1000)
	p.Mode = store.Versions
	st := scomplete(t, s, sacquire(t, s, p))
	if st.Mode != store.Versions {
		t.Fatalf("mode %s, want VERSIONS", st.Mode)
	}
	p.Mode = "" // the stream's mode holds for claims that name none
	for _, seq := range []int64{999, 1000} {
		p.Sequence = seq
		sclaim(t, s, p, store.StreamDuplicate)
	}
	p.Sequence = 5000
	scomplete(t, s, sacquire(t, s, p))
	p.Sequence = 4000 // superseded
	sclaim(t, s, p, store.StreamDuplicate)
}

func testStreamModeMismatch(t *testing.T, s store.StreamStore) {
	before := advance(t, s, "order-1", 1)
	p := sclaimP("order-1", 2)
	p.Mode = store.Versions
	_, err := s.ClaimStream(t.Context(), p)
	wantStreamErr(t, err, store.ErrModeMismatch)
	wantStreamUnchanged(t, s, before)
	// A policy that fixes a mode refuses claims naming the other on a new
	// stream too.
	p = sclaimP("order-2", 1)
	p.Mode, p.Policy.Mode = store.Versions, store.Dense
	_, err = s.ClaimStream(t.Context(), p)
	wantStreamErr(t, err, store.ErrModeMismatch)
}
