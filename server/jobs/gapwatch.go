package jobs

import (
	"context"
	"errors"
	"time"

	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/store"
)

// GapStore is what the gap watch reads and writes.
type GapStore interface {
	ParkedTotals(ctx context.Context) ([]store.ConsumerParked, error)
	ListOpenGaps(ctx context.Context, p store.ListOpenGapsParams) ([]store.OpenGap, error)
	SkipGap(ctx context.Context, p store.SkipGapParams) (store.SkipGapResult, error)
}

// gapPageSize is how many open gaps one ListOpenGaps read returns.
const gapPageSize = 500

// gapWatch is park mode's part of every reaper pass: it sets the parked
// gauges, and deals with each open gap whose oldest parked event has
// waited its consumer's gap_timeout: SKIP skips it (the store checks again,
// on its own clock, in the write), HOLD leaves it and counts it once.
type gapWatch struct {
	st GapStore
	// streams must be the resolver the API's handlers use, so that a
	// policy changed through StreamAdminService applies from the next pass.
	streams *policy.Streams
	m       *metrics.Metrics
	// held remembers the gaps counted as held, by stream, with the lowest
	// parked sequence then: a gap counts again only once it is another.
	held map[[2]string]int64
}

// newGapWatch returns a gap watch on st, resolving each consumer's gap
// timeout through streams.
func newGapWatch(st GapStore, streams *policy.Streams, m *metrics.Metrics) *gapWatch {
	return &gapWatch{st: st, streams: streams, m: m, held: map[[2]string]int64{}}
}

// pass returns how many gaps it skipped.
func (g *gapWatch) pass(ctx context.Context) (int, error) {
	totals, err := g.st.ParkedTotals(ctx)
	if err != nil {
		return 0, err
	}
	g.m.ParkedTotals(totals, time.Now())
	gaps, err := g.openGaps(ctx)
	if err != nil {
		return 0, err
	}
	now := time.Now()
	g.m.OpenGaps(gaps, now)
	skipped, seen := 0, map[[2]string]bool{}
	for _, gap := range gaps {
		rp, err := g.streams.For(ctx, gap.Consumer)
		if err != nil {
			return skipped, err
		}
		p, k := rp.Policy, [2]string{gap.Consumer, gap.Stream}
		if p.GapTimeout <= 0 || gap.LeaseLive || now.Sub(gap.OldestParkedAt) < p.GapTimeout {
			continue
		}
		if p.OnGapTimeout == store.GapSkip {
			_, err := g.st.SkipGap(ctx, store.SkipGapParams{Consumer: gap.Consumer, Stream: gap.Stream,
				Cause: store.SkipByGapTimeout, Policy: p})
			switch {
			case err == nil:
				skipped++
				g.m.GapTimedOut("skip")
			case !errors.Is(err, store.ErrNoGap): // ErrNoGap: the gap closed meanwhile
				return skipped, err
			}
			continue
		}
		seen[k] = true
		if g.held[k] != gap.Lowest {
			g.held[k] = gap.Lowest
			g.m.GapTimedOut("hold")
		}
	}
	for k := range g.held {
		if !seen[k] {
			delete(g.held, k)
		}
	}
	return skipped, nil
}

// openGaps reads every open gap, page by page.
func (g *gapWatch) openGaps(ctx context.Context) ([]store.OpenGap, error) {
	var all []store.OpenGap
	p := store.ListOpenGapsParams{Limit: gapPageSize}
	for {
		page, err := g.st.ListOpenGaps(ctx, p)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		if len(page) < gapPageSize {
			return all, nil
		}
		last := page[len(page)-1]
		p.AfterConsumer, p.AfterStream = last.Consumer, last.Stream
	}
}
