package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
)

// runLeaseSampler sums up the claims in flight, of keys and of streams,
// every interval until ctx ends, for the lease metrics: how many, how many
// await reconciliation, and how long the one left alone longest has been.
// The store reads only its index of claims in flight, so a sample costs the
// same however many finished records are stored. st is the decorated
// store, so the samples are counted in the store metrics like any call.
func runLeaseSampler(ctx context.Context, st store.Backend, interval time.Duration, m *metrics.Metrics, log *slog.Logger) {
	if interval <= 0 {
		log.Info("lease metrics off (--lease-sample-interval=0)")
		return
	}
	kinds := []struct {
		name   string
		sample func(context.Context) ([]store.LeaseStats, error)
	}{{metrics.LeaseKindKey, st.PendingLeases}, {metrics.LeaseKindStream, st.InFlightLeases}}
	failing := false
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		var firstErr error
		for _, k := range kinds {
			stats, err := k.sample(ctx)
			if err != nil {
				firstErr = err
				continue
			}
			m.ObserveLeases(k.name, stats, time.Now())
		}
		if ctx.Err() != nil {
			return
		}
		// One line when sampling starts failing and one when it recovers,
		// not one per interval; dedupd_lease_sample_timestamp_seconds
		// shows how old the figures are meanwhile.
		switch {
		case firstErr != nil && !failing:
			log.Warn("lease sample failed; the lease metrics keep their last values", "err", firstErr)
		case firstErr == nil && failing:
			log.Info("lease sample works again")
		}
		failing = firstErr != nil
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}
