package jobs

import (
	"context"
	"log/slog"
	"time"

	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
)

// LeaseStore is what the lease sampler reads: the claims in flight, of
// keys and of streams.
type LeaseStore interface {
	PendingLeases(ctx context.Context) ([]store.LeaseStats, error)
	InFlightLeases(ctx context.Context) ([]store.LeaseStats, error)
}

// RunLeaseSampler sums up the claims in flight, of keys and of streams,
// at once and then every interval until ctx ends, for the lease metrics:
// how many, how many await reconciliation, and how long the one left alone
// longest has been. The store reads only its index of claims in flight, so
// a sample costs the same however many finished records are stored. st is
// the decorated store, so the samples are counted in the store metrics
// like any call.
func RunLeaseSampler(ctx context.Context, st LeaseStore, interval time.Duration, m *metrics.Metrics, log *slog.Logger) {
	if interval <= 0 {
		log.Info("lease metrics off (--lease-sample-interval=0)")
		return
	}
	s := &leaseSampler{st: st, m: m, log: log}
	s.sample(ctx)
	every(ctx, interval, s.sample)
}

// leaseSampler remembers whether the last sample failed, so that it logs
// one line when sampling starts failing and one when it recovers, not one
// per interval; dedupd_lease_sample_timestamp_seconds shows how old the
// figures are meanwhile.
type leaseSampler struct {
	st      LeaseStore
	m       *metrics.Metrics
	log     *slog.Logger
	failing bool
}

func (s *leaseSampler) sample(ctx context.Context) {
	kinds := []struct {
		name   string
		sample func(context.Context) ([]store.LeaseStats, error)
	}{{metrics.LeaseKindKey, s.st.PendingLeases}, {metrics.LeaseKindStream, s.st.InFlightLeases}}
	var firstErr error
	for _, k := range kinds {
		stats, err := k.sample(ctx)
		if err != nil {
			firstErr = err
			continue
		}
		s.m.ObserveLeases(k.name, stats, time.Now())
	}
	if ctx.Err() != nil {
		return
	}
	switch {
	case firstErr != nil && !s.failing:
		s.log.Warn("lease sample failed; the lease metrics keep their last values", "err", firstErr)
	case firstErr == nil && s.failing:
		s.log.Info("lease sample works again")
	}
	s.failing = firstErr != nil
}
