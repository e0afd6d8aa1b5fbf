package loadtest

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketBoundsRoundTrip(t *testing.T) {
	for _, v := range []int64{0, 1, 63, 64, 65, 100, 127, 128, 1000, 12345, 1 << 30, 1<<40 + 12345} {
		b := bucketOf(v)
		lo, next := lowerBound(b), lowerBound(b+1)
		if v < lo || v >= next {
			t.Errorf("value %d in bucket %d = [%d, %d)", v, b, lo, next)
		}
		if v >= 64 && float64(next-lo)/float64(lo) > 1.0/32+1e-9 {
			t.Errorf("bucket %d = [%d, %d) is wider than 1/32 of its start", b, lo, next)
		}
	}
}

// Quantiles agree with the sorted samples to the bucket resolution, for a
// spread of latencies like a real run's.
func TestQuantilesMatchSortedSamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h, other histogram
	var samples []int64
	for i := range 20000 {
		us := int64(rng.ExpFloat64()*2000) + 50
		samples = append(samples, us)
		if i%2 == 0 {
			h.record(time.Duration(us) * time.Microsecond)
		} else {
			other.record(time.Duration(us) * time.Microsecond)
		}
	}
	h.merge(&other)
	slices.Sort(samples)
	for _, q := range []float64{0.5, 0.9, 0.99, 1} {
		want := samples[int(q*float64(len(samples))+0.999999)-1]
		got := h.quantile(q).Microseconds()
		if got > want || float64(want-got) > float64(want)/32+1 {
			t.Errorf("q%.2f = %d µs, sorted samples say %d", q, got, want)
		}
	}
	if h.n != int64(len(samples)) || h.max != samples[len(samples)-1] {
		t.Errorf("n %d max %d, want %d and %d", h.n, h.max, len(samples), samples[len(samples)-1])
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	var h histogram
	for i := 0; b.Loop(); i++ {
		h.record(time.Duration(i%50000) * time.Microsecond)
	}
}
