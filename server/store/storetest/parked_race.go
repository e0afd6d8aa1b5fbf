package storetest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dedupd/dedupd/server/store"
)

func parkRaceTests() []streamTest {
	return []streamTest{
		{"ParksAgainstCompletions", testParkRaceParksAndCompletions},
		{"ClaimParkedPickups", testParkRaceClaimParked},
	}
}

// effects is the oracle of the race tests: the effects done per stream, in
// the order their doers did them. The model says each stream's list must
// be exactly its sequences, in order, each once.
type effects struct {
	mu   sync.Mutex
	done map[string][]int64
}

func (e *effects) do(stream string, seq int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.done[stream] = append(e.done[stream], seq)
}

func (e *effects) want(t *testing.T, stream string, want []int64) {
	t.Helper()
	if got := e.done[stream]; !slices.Equal(got, want) {
		t.Fatalf("stream %q: effects %v, want %v: each event once, in order", stream, got, want)
	}
}

// process does the effect of the held event and every event its
// completions hand back, as a park-mode consumer does, and returns how
// many it did.
func process(t *testing.T, s store.StreamStore, e *effects, held store.Stream) (n int64) {
	for {
		e.do(held.Stream, held.InFlight)
		n++
		p := scompleteP(held)
		p.NextLeaseTTL = longTTL
		r, err := s.CompleteStream(t.Context(), p)
		if err != nil {
			t.Errorf("CompleteStream(%q, %d): %v", held.Stream, held.InFlight, err)
			return n
		}
		if r.Next == nil {
			return n
		}
		held = heldAs(r.Stream, r.Next)
	}
}

// Every event of a stream is delivered twice, all at once in a shuffled
// order, each delivery a claim with park: whatever interleaving of parks
// and completions the store sees, each event's effect happens exactly once
// and in sequence order, and nothing stays parked. A completion that
// commits before a park makes that park's claim ACQUIRED; one that commits
// after hands the parked event out; the atomic write leaves no third case.
func testParkRaceParksAndCompletions(t *testing.T, s store.StreamStore) {
	const events = 24
	var deliveries []int64
	for seq := int64(1); seq <= events; seq++ {
		deliveries = append(deliveries, seq, seq)
	}
	rand.Shuffle(len(deliveries), func(i, j int) { deliveries[i], deliveries[j] = deliveries[j], deliveries[i] })
	e := &effects{done: map[string][]int64{}}
	concurrently(len(deliveries), func(i int) {
		seq := deliveries[i]
		p := parkP("race", seq, fmt.Sprintf("event %d", seq))
		p.Digest = []byte(fmt.Sprintf("d%d", seq))
		p.Owner = fmt.Sprintf("delivery-%d", i)
		res, err := s.ClaimStream(t.Context(), p)
		switch {
		case err != nil:
			t.Errorf("park claim of %d: %v", seq, err)
		case res.Outcome == store.StreamAcquired:
			process(t, s, e, res.Stream)
		case res.Outcome == store.StreamInProgress && res.Stream.InFlight != seq:
			t.Errorf("claim of %d in progress behind %d", seq, res.Stream.InFlight)
		}
	})
	want := make([]int64, events)
	for i := range want {
		want[i] = int64(i + 1)
	}
	e.want(t, "race", want)
	if st := getStream(t, s, "race"); st.HighWater != events || st.Parked != 0 || st.InFlight != 0 {
		t.Fatalf("after the race: %+v", st)
	}
	wantParked(t, s, "race")
}

// Streams whose gaps were skipped hold ready events and nobody to hand
// them to; pickup workers race on ClaimParked until all are done. Each
// ready event goes to exactly one worker, and each stream's effects come
// in order.
func testParkRaceClaimParked(t *testing.T, s store.StreamStore) {
	const (
		streams = 4
		workers = 6
	)
	seqs := []int64{3, 4, 5, 6}
	for i := range streams {
		name := fmt.Sprintf("s%d", i)
		for _, seq := range seqs {
			park(t, s, parkP(name, seq, "x"))
		}
		if _, err := s.SkipGap(t.Context(), store.SkipGapParams{Consumer: consumer, Stream: name, Cause: store.SkipByAdmin,
			Policy: streamPolicy()}); err != nil {
			t.Fatal(err)
		}
	}
	e := &effects{done: map[string][]int64{}}
	var finished atomic.Int64
	total := int64(streams * len(seqs))
	concurrently(workers, func(i int) {
		for attempt := 0; finished.Load() < total && attempt < 10000; attempt++ {
			r, err := s.ClaimParked(t.Context(), store.ClaimParkedParams{Consumer: consumer, Owner: fmt.Sprintf("w%d", i),
				LeaseTTL: longTTL, Policy: streamPolicy()})
			if err != nil {
				t.Errorf("ClaimParked: %v", err)
				return
			}
			if r.Event == nil {
				time.Sleep(time.Millisecond) // the rest are leased to other workers
				continue
			}
			finished.Add(process(t, s, e, heldAs(r.Stream, r.Event)))
		}
	})
	for i := range streams {
		e.want(t, fmt.Sprintf("s%d", i), seqs)
	}
}
