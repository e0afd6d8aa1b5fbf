package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
)

// runReaper deletes expired records every cfg.ReapInterval until ctx ends,
// unless the configuration turns it off. Each pass deletes in batches of at
// most cfg.ReapBatch rows, so no transaction grows with the backlog; expired
// records are already invisible to callers, so the reaper only reclaims
// space and can fall behind without harm. Expired streams go in the same
// passes. st is the decorated store, so the reaper's deletes are counted
// in the store metrics like every other call. Each pass also runs park
// mode's gap watch (gapWatch): the parked gauges and the gap timeouts.
func runReaper(ctx context.Context, st store.Backend, cfg Config, m *metrics.Metrics, log *slog.Logger) {
	switch {
	case cfg.ReaperOff:
		log.Info("reaper off (--reaper=off): expired records stay stored until something else deletes them, such as CockroachDB row-level TTL; the gap timeouts of parked streams still run every --reap-interval")
		runGapWatch(ctx, st, cfg, m, log)
		return
	case cfg.ReapInterval <= 0:
		log.Info("reaper off (--reap-interval=0)")
		return
	}
	log.Info("reaper on", "interval", cfg.ReapInterval, "batch", cfg.ReapBatch)
	ticker := time.NewTicker(cfg.ReapInterval)
	defer ticker.Stop()
	gaps := newGapWatch(st, cfg, m)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		deleted, err := reapOnce(ctx, st.DeleteExpired, cfg.ReapBatch)
		if err == nil {
			var n int
			n, err = reapOnce(ctx, st.DeleteExpiredStreams, cfg.ReapBatch)
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
