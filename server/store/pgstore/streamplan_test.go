package pgstore

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// A plan made at an estimate of the clock, carried out at the real clock
// on the same side of the stored stream's expiry and lease, must be
// exactly what store.ApplyStream decides at the real clock; and a plan is
// made for every write ApplyStream decides away from those boundaries (or
// the fast path would never run). The model is ApplyStream itself, over
// streams in every state and every command, at clocks on both sides of
// each boundary.
func TestStreamPlanIsApplyStream(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	policy := store.StreamPolicy{DefaultLeaseTTL: 30 * time.Second, StreamTTL: time.Hour}
	streams := map[string]*store.Stream{
		"absent": nil,
		"in flight": {Consumer: "c", Stream: "s", Mode: store.Dense, HighWater: 4, InFlight: 5, FencingToken: 9,
			Digest: []byte("d5"), Owner: "w", LeaseExpiresAt: base.Add(10 * time.Second),
			CreatedAt: base.Add(-time.Hour), UpdatedAt: base.Add(-20 * time.Second), ExpiresAt: base.Add(time.Hour)},
		"idle": {Consumer: "c", Stream: "s", Mode: store.Dense, HighWater: 5, LastOutcome: store.Completed, FinishedToken: 9,
			FencingToken: 9, LeaseExpiresAt: base.Add(-time.Minute), CreatedAt: base.Add(-time.Hour),
			UpdatedAt: base.Add(-time.Minute), ExpiresAt: base.Add(40 * time.Minute)},
		"versions, rejected": {Consumer: "c", Stream: "s", Mode: store.Versions, HighWater: 7, LastOutcome: store.Rejected,
			LastRejection: &store.Rejection{Reason: "r", Message: "m"}, Rejected: 1, FinishedToken: 3, FencingToken: 3,
			LeaseExpiresAt: base.Add(-time.Minute), CreatedAt: base.Add(-time.Hour), UpdatedAt: base.Add(-time.Minute),
			ExpiresAt: base.Add(20 * time.Second)},
		// Park mode: a plan carries the parked columns as ApplyStream
		// copies them, and is never made where ApplyStream needs the
		// parked events (it answers ErrNeedsParkedView, which writes
		// nothing here).
		"in flight, events parked": {Consumer: "c", Stream: "s", Mode: store.Dense, HighWater: 4, InFlight: 5, FencingToken: 9,
			Digest: []byte("d5"), Owner: "w", LeaseExpiresAt: base.Add(10 * time.Second), Parked: 2, ParkedBytes: 64,
			CreatedAt: base.Add(-time.Hour), UpdatedAt: base.Add(-20 * time.Second), ExpiresAt: base.Add(time.Hour)},
		"idle, a gap skipped": {Consumer: "c", Stream: "s", Mode: store.Dense, HighWater: 5, LastOutcome: store.Completed,
			FinishedToken: 9, FencingToken: 9, Skipped: 2, LastSkipped: &store.SkippedRange{From: 3, To: 4,
				Cause: store.SkipByAdmin, At: base.Add(-2 * time.Minute)},
			LeaseExpiresAt: base.Add(-time.Minute), CreatedAt: base.Add(-time.Hour),
			UpdatedAt: base.Add(-time.Minute), ExpiresAt: base.Add(40 * time.Minute)},
		"expired, events parked": {Consumer: "c", Stream: "s", Mode: store.Dense, HighWater: 5, LastOutcome: store.Completed,
			FinishedToken: 9, FencingToken: 9, Parked: 1, ParkedBytes: 8, LeaseExpiresAt: base.Add(-2 * time.Hour),
			CreatedAt: base.Add(-3 * time.Hour), UpdatedAt: base.Add(-2 * time.Hour), ExpiresAt: base.Add(-time.Hour)},
	}
	commands := []store.StreamCommand{
		store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 1, Owner: "o", Policy: policy},
		store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 5, Digest: []byte("d5"), Owner: "o", Policy: policy},
		store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 6, Owner: "o", LeaseTTL: 1500*time.Millisecond + 300, Policy: policy},
		store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 9, Mode: store.Versions, Owner: "o", Policy: policy},
		store.CompleteStreamParams{Consumer: "c", Stream: "s", Sequence: 5, FencingToken: 9, Policy: policy},
		store.RejectStreamParams{Consumer: "c", Stream: "s", Sequence: 5, FencingToken: 9,
			Rejection: store.Rejection{Reason: "bad", Message: "poison"}, Policy: policy},
		store.ReleaseStreamParams{Consumer: "c", Stream: "s", Sequence: 5, FencingToken: 9, Policy: policy},
		store.ExtendStreamLeaseParams{Consumer: "c", Stream: "s", Sequence: 5, FencingToken: 9, LeaseTTL: time.Minute, Policy: policy},
		store.ResetStreamParams{Consumer: "c", Stream: "s", HighWater: 2, Policy: policy},
		store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 8, Owner: "o", Park: true, Payload: []byte("p"), Policy: policy},
		store.ClaimStreamParams{Consumer: "c", Stream: "s", Sequence: 6, Owner: "o", Park: true, Policy: policy},
		store.ClaimParkedParams{Consumer: "c", Stream: "s", Owner: "o", Policy: policy},
		store.DropParkedParams{Consumer: "c", Stream: "s", From: 1, Policy: policy},
		store.SkipGapParams{Consumer: "c", Stream: "s", Cause: store.SkipByAdmin, Policy: policy},
	}
	// Clocks on each side of every boundary the streams have, and far
	// from them.
	clocks := []time.Time{base, base.Add(-2 * time.Hour), base.Add(2 * time.Hour)}
	for _, st := range streams {
		if st != nil {
			for _, b := range []time.Time{st.ExpiresAt, st.LeaseExpiresAt} {
				clocks = append(clocks, b.Add(-time.Microsecond), b, b.Add(5*time.Millisecond))
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	planned := 0
	for name, st := range streams {
		for _, cmd := range commands {
			for _, at := range clocks {
				p, ok := planStreamWrite(st, cmd, at)
				want, err := store.ApplyStream(st, cmd, at)
				writes := err == nil && want.Write
				if ok && !writes {
					t.Errorf("%s, %T at %v: a plan for a decision that writes nothing (%v)", name, cmd, at, err)
				}
				if !ok {
					if writes && farFromBoundaries(st, at) {
						t.Errorf("%s, %T at %v: no plan for a write away from every boundary", name, cmd, at)
					}
					continue
				}
				planned++
				// The real clock: anywhere the comparisons come out the same.
				for range 20 {
					now := store.Now(at.Add(time.Duration(rng.Int64N(int64(4*time.Hour))) - 2*time.Hour))
					if st != nil && (now.Before(st.ExpiresAt) != p.beforeExpiry || now.Before(st.LeaseExpiresAt) != p.beforeLease) {
						continue
					}
					want, err := store.ApplyStream(st, cmd, now)
					if err != nil || !reflect.DeepEqual(p.at(now), want) {
						t.Fatalf("%s, %T planned at %v, written at %v:\n got  %+v\n want %+v (%v)", name, cmd, at, now, p.at(now), want, err)
					}
				}
			}
		}
	}
	if planned == 0 {
		t.Fatal("no plan was made: the test checked nothing")
	}
}

// farFromBoundaries reports whether at and at plus planProbe lie on the
// same side of the stream's expiry and lease.
func farFromBoundaries(st *store.Stream, at time.Time) bool {
	if st == nil {
		return true
	}
	later := at.Add(planProbe)
	return at.Before(st.ExpiresAt) == later.Before(st.ExpiresAt) && at.Before(st.LeaseExpiresAt) == later.Before(st.LeaseExpiresAt)
}
