package server

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
)

// healthServices are the names whose status the watcher sets: the server
// as a whole ("") and each service it serves.
var healthServices = []string{
	"",
	dedupv1.DedupService_ServiceDesc.ServiceName,
	dedupv1.AdminService_ServiceDesc.ServiceName,
}

// setHealth sets every health service to SERVING or NOT_SERVING.
func setHealth(hs *health.Server, serving bool) {
	status := healthpb.HealthCheckResponse_NOT_SERVING
	if serving {
		status = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range healthServices {
		hs.SetServingStatus(name, status)
	}
}

// healthWatcher pings the store and reports SERVING while it answers,
// NOT_SERVING while it does not. A ping gets one interval to answer, so a
// store that hangs counts as down.
type healthWatcher struct {
	st       store.Store
	hs       *health.Server
	interval time.Duration
	m        *metrics.Metrics
	log      *slog.Logger
	serving  bool
}

// check pings once and updates the status if it changed.
func (w *healthWatcher) check(ctx context.Context) {
	pingCtx, cancel := context.WithTimeout(ctx, w.interval)
	err := w.st.Ping(pingCtx)
	cancel()
	if ctx.Err() != nil {
		return
	}
	w.m.Serving(err == nil)
	if now := err == nil; now != w.serving {
		w.serving = now
		setHealth(w.hs, now)
		if now {
			w.log.Info("store answers; health SERVING")
		} else {
			w.log.Warn("store does not answer; health NOT_SERVING", "err", err)
		}
	}
}

// run checks every interval until ctx ends.
func (w *healthWatcher) run(ctx context.Context) {
	ticker := time.NewTicker(w.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			w.check(ctx)
		}
	}
}
