package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/policy"
)

// ReaperStore is what the reaper works through: the deletes of expired
// records and streams, and what the gap watch reads and skips.
type ReaperStore interface {
	DeleteExpired(ctx context.Context, limit int) (int, error)
	DeleteExpiredStreams(ctx context.Context, limit int) (int, error)
	GapStore
}

// ReaperOptions are the reaper's serve flags.
type ReaperOptions struct {
	// Off runs no reaper (--reaper=off), for databases that delete expired
	// rows themselves, such as CockroachDB with row-level TTL; the gap
	// watch still runs every Interval.
	Off bool
	// Interval is how often a pass runs; zero runs none, not even the gap
	// watch. Batch is how many rows one delete takes at most.
	Interval time.Duration
	Batch    int
}

// RunReaper deletes expired records every opts.Interval until ctx ends,
// unless the options turn it off. Each pass deletes in batches of at most
// opts.Batch rows, so no transaction grows with the backlog; expired
// records are already invisible to callers, so the reaper only reclaims
// space and can fall behind without harm. Expired streams go in the same
// passes. st is the decorated store, so the reaper's deletes are counted
// in the store metrics like every other call. Each pass also runs park
// mode's gap watch on streams, the process's stream policy resolver.
func RunReaper(ctx context.Context, st ReaperStore, streams *policy.Streams, opts ReaperOptions, m *metrics.Metrics, log *slog.Logger) {
	gaps := newGapWatch(st, streams, m)
	switch {
	case opts.Off:
		log.Info("reaper off (--reaper=off): expired records stay stored until something else deletes them, such as CockroachDB row-level TTL; the gap timeouts of parked streams still run every --reap-interval")
		if opts.Interval > 0 {
			every(ctx, opts.Interval, func(ctx context.Context) { gapWatchAlone(ctx, gaps, log) })
		}
		return
	case opts.Interval <= 0:
		log.Info("reaper off (--reap-interval=0)")
		return
	}
	log.Info("reaper on", "interval", opts.Interval, "batch", opts.Batch)
	every(ctx, opts.Interval, func(ctx context.Context) { reapPass(ctx, st, gaps, opts.Batch, m, log) })
}

// reapPass deletes what has expired, then runs the gap watch.
func reapPass(ctx context.Context, st ReaperStore, gaps *gapWatch, batch int, m *metrics.Metrics, log *slog.Logger) {
	deleted, err := reapOnce(ctx, st.DeleteExpired, batch)
	if err == nil {
		var n int
		n, err = reapOnce(ctx, st.DeleteExpiredStreams, batch)
		deleted += n
	}
	if err == nil {
		var skipped int
		if skipped, err = gaps.pass(ctx); skipped > 0 {
			log.Info("stream gaps skipped after their gap_timeout", "streams", skipped)
		}
	}
	if ctx.Err() != nil {
		return
	}
	m.ReaperPass(deleted, err, float64(time.Now().Unix()))
	if err != nil {
		log.Warn("reaper pass failed", "deleted", deleted, "err", err)
	} else if deleted > 0 {
		log.Debug("reaper pass", "deleted", deleted)
	}
}

// gapWatchAlone is a pass of a server whose reaper is off (--reaper=off:
// the database deletes expired rows, but only dedupd can time a gap out).
func gapWatchAlone(ctx context.Context, gaps *gapWatch, log *slog.Logger) {
	if _, err := gaps.pass(ctx); err != nil && ctx.Err() == nil {
		log.Warn("gap watch pass failed", "err", err)
	}
}

// reapOnce deletes batches until one comes back short.
func reapOnce(ctx context.Context, deleteExpired func(context.Context, int) (int, error), batch int) (int, error) {
	total := 0
	for {
		n, err := deleteExpired(ctx, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
	}
}
