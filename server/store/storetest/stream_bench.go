package storetest

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/server/store"
)

// BenchStreamCycle measures ClaimStream + CompleteStream of the next event
// of a stream, at b's parallelism: each goroutine owns one stream and
// walks its sequences 1, 2, 3, ... One op is one event processed.
func BenchStreamCycle(b *testing.B, s store.StreamStore) {
	ctx := context.Background()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		stream := "stream-" + strconv.FormatInt(next.Add(1), 10)
		p := store.ClaimStreamParams{Consumer: "bench", Stream: stream, Owner: "worker", Policy: streamPolicy()}
		for seq := int64(1); pb.Next(); seq++ {
			p.Sequence = seq
			res, err := s.ClaimStream(ctx, p)
			if err != nil || res.Outcome != store.StreamAcquired {
				b.Errorf("ClaimStream %d: %v %v", seq, res.Outcome, err)
				return
			}
			if _, err := s.CompleteStream(ctx, scompleteP(res.Stream)); err != nil {
				b.Errorf("CompleteStream %d: %v", seq, err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchParkCycle measures park mode at b's parallelism: each goroutine owns
// one stream and gets its events in swapped pairs (2, 1, 4, 3, ...). The
// later one of a pair is parked, the earlier claimed and completed, and
// that completion hands the parked one back, which is completed too. One
// op is one pair: a park, a claim and two completions (one a hand-off).
func BenchParkCycle(b *testing.B, s store.StreamStore) {
	ctx := context.Background()
	var next atomic.Int64
	payload := make([]byte, 256)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		stream := "park-" + strconv.FormatInt(next.Add(1), 10)
		p := store.ClaimStreamParams{Consumer: "bench", Stream: stream, Owner: "worker", Park: true, Payload: payload,
			Policy: streamPolicy()}
		for seq := int64(1); pb.Next(); seq += 2 {
			p.Sequence = seq + 1
			if res, err := s.ClaimStream(ctx, p); err != nil || res.Outcome != store.StreamParked {
				b.Errorf("park %d: %v %v", seq+1, res.Outcome, err)
				return
			}
			p.Sequence = seq
			res, err := s.ClaimStream(ctx, p)
			if err != nil || res.Outcome != store.StreamAcquired {
				b.Errorf("claim %d: %v %v", seq, res.Outcome, err)
				return
			}
			r, err := s.CompleteStream(ctx, scompleteP(res.Stream))
			if err != nil || r.Next == nil {
				b.Errorf("complete %d: next %v, %v", seq, r.Next, err)
				return
			}
			held := r.Stream
			held.InFlight, held.FencingToken = r.Next.Event.Sequence, r.Next.FencingToken
			if _, err := s.CompleteStream(ctx, scompleteP(held)); err != nil {
				b.Errorf("complete %d: %v", seq+1, err)
				return
			}
		}
	})
	b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "events/s")
}
