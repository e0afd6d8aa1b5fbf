package pgstore_test

import (
	"context"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/pgtest"
	"github.com/dedupd/dedupd/server/store"
)

// A store's cached row of a stream says nothing of events another server
// parked since: the parked write moved the row's version, so the
// read-free write misses, and the finish is decided with the parked
// events (handing out the next one when it is parked, keeping the park
// count when it is not). Hand-computed answers: store a holds sequence 1
// (token 1) of a dense stream; b parks one event; a completes 1.
func TestParkedUnderCachedStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parked int64 // the sequence b parks
		// after a's Complete(1): the sequence handed out with it (0: none),
		// and the stream's in-flight sequence and park count.
		next, inFlight, count int64
	}{
		{"the next sequence: handed out by the finish", 2, 2, 2, 1},
		{"past a gap: still parked", 3, 0, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			url := pgtest.URL(t)
			a := migrated(t, openStore(t, url))
			b := openStore(t, url)
			first := claimStream(1, "a")
			first.Mode = store.Dense
			claimed := mustClaimStream(t, ctx, a, first) // a caches the row
			park := claimStream(tc.parked, "b")
			park.Mode, park.Park, park.Payload = store.Dense, true, []byte("event")
			if c, err := b.ClaimStream(ctx, park); err != nil || c.Outcome != store.StreamParked {
				t.Fatalf("park of %d: %v, %v", tc.parked, c.Outcome, err)
			}
			res, err := a.CompleteStream(ctx, completeStream(1, claimed.FencingToken))
			if err != nil {
				t.Fatal(err)
			}
			var next int64
			if res.Next != nil {
				next = res.Next.Event.Sequence
				if string(res.Next.Event.Payload) != "event" {
					t.Errorf("handed-out payload %q, want %q", res.Next.Event.Payload, "event")
				}
			}
			if next != tc.next {
				t.Errorf("complete handed out %d, want %d", next, tc.next)
			}
			got, err := b.GetStream(ctx, "billing", "order-1")
			if err != nil {
				t.Fatal(err)
			}
			if got.HighWater != 1 || got.InFlight != tc.inFlight || got.Parked != tc.count || !sameStream(got, res.Stream) {
				t.Errorf("stored %+v (answered %+v), want mark 1, in flight %d, %d parked", got, res.Stream, tc.inFlight, tc.count)
			}
		})
	}
}
