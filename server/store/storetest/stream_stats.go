package storetest

import (
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// testStreamStats counts a hand-built set of streams: one finished, one
// held, one whose lease ran out, one forgotten, and another consumer's.
func testStreamStats(t *testing.T, s store.StreamStore) {
	if st, err := s.StreamStats(t.Context(), ""); err != nil || len(st) != 0 {
		t.Fatalf("StreamStats of an empty store: %+v, %v", st, err)
	}
	lapsed := sclaimP("s-lapsed", 1)
	lapsed.LeaseTTL = shortTTL
	oldest := sacquire(t, s, lapsed)
	time.Sleep(2 * time.Millisecond)
	sacquire(t, s, sclaimP("s-held", 1))
	advance(t, s, "s-done", 2)
	forgotten := sclaimP("s-forgotten", 1)
	forgotten.Policy.StreamTTL, forgotten.LeaseTTL = shortTTL, shortTTL
	sacquire(t, s, forgotten)
	other := sclaimP("b-1", 1)
	other.Consumer = "billing"
	billing := sacquire(t, s, other)
	sleepPast(2 * shortTTL)

	all, err := s.StreamStats(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	want := []store.ConsumerStreamStats{
		{Consumer: "billing", Streams: 1, InFlight: 1, OldestInFlightAt: billing.UpdatedAt},
		{Consumer: consumer, Streams: 3, InFlight: 2, LeaseExpired: 1, OldestInFlightAt: oldest.UpdatedAt},
	}
	if len(all) != len(want) {
		t.Fatalf("StreamStats of every consumer: %+v\nwant %+v", all, want)
	}
	for i, got := range all {
		w := want[i]
		if !got.OldestInFlightAt.Equal(w.OldestInFlightAt) {
			t.Errorf("%s: OldestInFlightAt %v, want %v", got.Consumer, got.OldestInFlightAt, w.OldestInFlightAt)
		}
		got.OldestInFlightAt, w.OldestInFlightAt = time.Time{}, time.Time{}
		if got != w {
			t.Errorf("StreamStats[%d]:\n got %+v\nwant %+v", i, got, w)
		}
	}
	one, err := s.StreamStats(t.Context(), "billing")
	if err != nil || len(one) != 1 || one[0].Streams != 1 {
		t.Errorf("StreamStats(billing) = %+v, %v", one, err)
	}
	if none, err := s.StreamStats(t.Context(), "nobody"); err != nil || len(none) != 0 {
		t.Errorf("StreamStats of a consumer without streams: %+v, %v", none, err)
	}
	// The claims in flight alone: neither the finished stream nor the
	// forgotten one.
	wantLeases(t, "InFlightLeases", s.InFlightLeases, []store.LeaseStats{
		{Consumer: "billing", Held: 1, OldestUpdatedAt: billing.UpdatedAt},
		{Consumer: consumer, Held: 2, Expired: 1, OldestUpdatedAt: oldest.UpdatedAt}})
}
