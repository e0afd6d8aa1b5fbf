package loadtest

import (
	"math/bits"
	"time"
)

// histogram records latencies in microseconds in log-linear buckets: exact
// below 64 µs, then 32 buckets per power of two, so a percentile is within
// about 3% of the true value whatever the run length, in fixed memory
// (16 KiB). Each caller keeps its own; they are merged at the end.
type histogram struct {
	counts [maxBuckets]int64
	n      int64
	max    int64
}

const (
	subBits    = 5
	maxBuckets = 64 << subBits
)

func bucketOf(us int64) int {
	v := uint64(max(us, 0))
	if v < 2<<subBits {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return (shift+1)<<subBits + int(v>>shift) - 1<<subBits
}

// lowerBound is the smallest value that falls in bucket b.
func lowerBound(b int) int64 {
	if b < 2<<subBits {
		return int64(b)
	}
	shift := b>>subBits - 1
	return int64(b&(1<<subBits-1)+1<<subBits) << shift
}

func (h *histogram) record(d time.Duration) {
	us := d.Microseconds()
	h.counts[bucketOf(us)]++
	h.n++
	h.max = max(h.max, us)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the latency below which a fraction q of the samples lie:
// the lower bound of the bucket holding the sample of rank ceil(q*n),
// never more than the largest sample.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.999999)
	rank = min(max(rank, 1), h.n)
	var seen int64
	for b, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(lowerBound(b), h.max)) * time.Microsecond
		}
	}
	return time.Duration(h.max) * time.Microsecond
}
