package sqlreadtest

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// The generated rows and filters. Every comparison a rule makes with the
// clock gets rows a microsecond before, at and after it; keys and prefixes
// carry what a LIKE or a byte-unaware comparison would get wrong (%, _, \,
// case, multi-byte code points on either side of a byte boundary, the
// highest code point, which has no successor).

var (
	consumers = []string{"c1", "c2", "c3"}
	states    = []store.State{store.Pending, store.Completed, store.Rejected, store.Released}
	// boundary is a microsecond before, at and after now.
	boundary = []time.Time{now.Add(-time.Microsecond), now, now.Add(time.Microsecond)}
	// keys are the keys written and the prefixes and AfterKeys filtered on.
	keys = []string{"a", "a%", "a%b", "a_", "a_b", "ab", `a\`, `a\b`, "A", "é", "éa", "e", "ê",
		"\u007f", "\u0080x", "\ud7ff", "\ue000", "\U0010FFFF", "\U0010FFFFa", "a\U0010FFFF", "%", "_", `\`, "z"}
	// stamps are the CreatedAt and UpdatedAt written, bounds are the time
	// filters: on, just off and between the microseconds of the stamps.
	hour   = now.Add(-time.Hour)
	stamps = []time.Time{now.Add(-2 * time.Hour), hour.Add(-time.Microsecond), hour, hour.Add(time.Microsecond), now}
	bounds = []time.Time{hour, hour.Add(time.Microsecond), hour.Add(500 * time.Nanosecond), now.Add(-2 * time.Hour)}
)

// records are, for each consumer, every state at every expiry and lease
// boundary, twice over, under keys that start with each of keys.
func records() []store.Record {
	rng := rand.New(rand.NewPCG(28, 3))
	var out []store.Record
	for _, c := range consumers {
		for i := range 2 * len(states) * len(boundary) * len(boundary) {
			key := keys[i%len(keys)]
			if i >= len(keys) {
				key += strconv.Itoa(i)
			}
			out = append(out, store.Record{
				Consumer: c, Key: key, State: states[i%len(states)],
				FencingToken: int64(i + 1), Attempts: 1, Owner: "w",
				CreatedAt: pick(rng, stamps), UpdatedAt: pick(rng, stamps),
				ExpiresAt:      boundary[i/len(states)%len(boundary)],
				LeaseExpiresAt: boundary[i/len(states)/len(boundary)%len(boundary)],
			})
		}
	}
	return out
}

func pick[T any](rng *rand.Rand, from []T) T { return from[rng.IntN(len(from))] }

// maybe is one of from, or, two times in three, the zero value: no filter.
func maybe[T any](rng *rand.Rand, from []T) T {
	if rng.IntN(3) != 0 {
		var zero T
		return zero
	}
	return pick(rng, from)
}

func someStates(rng *rand.Rand) []store.State {
	var out []store.State
	for _, s := range states {
		if rng.IntN(3) == 0 {
			out = append(out, s)
		}
	}
	return out
}

// listParams are n filters of ListRecords, every field drawn at random.
func listParams(n int) []store.ListParams {
	rng := rand.New(rand.NewPCG(28, 7))
	out := make([]store.ListParams, n)
	for i := range out {
		out[i] = store.ListParams{
			Consumer: pick(rng, append(consumers, "nobody")), States: someStates(rng),
			KeyPrefix:    maybe(rng, keys),
			CreatedAfter: maybe(rng, bounds), CreatedBefore: maybe(rng, bounds),
			UpdatedAfter: maybe(rng, bounds), UpdatedBefore: maybe(rng, bounds),
			LeaseExpired: rng.IntN(4) == 0,
			AfterKey:     maybe(rng, keys),
			Limit:        pick(rng, []int{1, 5, 1000}),
		}
	}
	return out
}

// purgeParams are n valid filters of CountPurge.
func purgeParams(n int) []store.PurgeParams {
	rng := rand.New(rand.NewPCG(28, 11))
	var out []store.PurgeParams
	for len(out) < n {
		p := store.PurgeParams{
			Consumer: pick(rng, append(consumers, "", "nobody")), States: someStates(rng),
			UpdatedBefore: maybe(rng, bounds), ExpiredOnly: rng.IntN(2) == 0, Limit: 1000,
		}
		if p.Validate() == nil {
			out = append(out, p)
		}
	}
	return out
}

// streamRow is a stream and the sequences parked on it.
type streamRow struct {
	store.Stream
	parked []int64
}

// streamRows are, for each consumer, streams of both modes at every expiry
// boundary, with no claim or one at every lease boundary, and parked events
// at, after, or not at the sequence after the high-water mark.
func streamRows() []streamRow {
	const hw = 4
	parkedSets := [][]int64{nil, {hw + 1}, {hw + 2}, {hw + 1, hw + 3}}
	var out []streamRow
	for _, c := range consumers {
		i := 0
		for _, mode := range []store.StreamMode{store.Dense, store.Versions} {
			for _, expires := range boundary {
				for _, inFlight := range []int64{0, hw + 1} {
					for _, lease := range boundary {
						for _, parked := range parkedSets {
							i++
							out = append(out, streamRow{Stream: store.Stream{
								Consumer: c, Stream: "s" + strconv.Itoa(1000+i), Mode: mode, HighWater: hw,
								InFlight: inFlight, FencingToken: 1, LeaseExpiresAt: lease,
								CreatedAt: hour, UpdatedAt: hour, ExpiresAt: expires, Parked: int64(len(parked)),
							}, parked: parked})
						}
					}
				}
			}
		}
	}
	return out
}
