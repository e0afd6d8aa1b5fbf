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
