package loglimit

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
)

// A kind gets its burst, then one line per refill; the line after a gap
// says how many were dropped; kinds do not share buckets. The clock is a
// variable, so nothing depends on how fast the test runs.
func TestLimiterPerKind(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewWithClock(1, 2, func() time.Time { return now })
	claim := Key{"/dedup.v1.DedupService/Claim", codes.Unavailable}
	steps := []struct {
		advance time.Duration
		key     Key
		ok      bool
		dropped int64
	}{
		{0, claim, true, 0},
		{0, claim, true, 0},
		{0, claim, false, 0},
		{0, claim, false, 0},
		{0, Key{claim.What, codes.Internal}, true, 0}, // another code: its own bucket
		{0, Key{"/dedup.v1.DedupService/Complete", codes.Unavailable}, true, 0},
		{500 * time.Millisecond, claim, false, 0},
		{500 * time.Millisecond, claim, true, 3}, // one token back after 1 s
		{0, claim, false, 0},
		{2 * time.Second, claim, true, 1},
		{0, claim, true, 0},
	}
	for i, s := range steps {
		now = now.Add(s.advance)
		ok, dropped := l.Allow(s.key)
		if ok != s.ok || dropped != s.dropped {
			t.Fatalf("step %d (%v): allowed %v dropped %d, want %v and %d", i, s.key, ok, dropped, s.ok, s.dropped)
		}
	}
}

// Past maxKeys kinds, new kinds share one bucket: memory stays bounded.
func TestLimiterBoundsKinds(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewWithClock(1, 1, func() time.Time { return now })
	for i := range maxKeys + 10 {
		l.Allow(Key{What: fmt.Sprint("event-", i)})
	}
	if n := len(l.kinds); n != maxKeys+1 {
		t.Fatalf("%d kinds tracked, want %d and the shared one", n, maxKeys)
	}
	// The shared bucket had one token, taken by the first kind past the cap.
	if ok, _ := l.Allow(Key{What: "yet another"}); ok {
		t.Fatal("a kind past the cap got a bucket of its own")
	}
}
