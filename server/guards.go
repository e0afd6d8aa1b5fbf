package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/auth"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/replybudget"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/throttle"
)

// newGuards loads the auth file and the TLS files and builds the limiters.
// The function it returns reloads the files (SIGHUP); a file that fails to
// load leaves the one in force.
func newGuards(cfg Config, m *metrics.Metrics, log *slog.Logger) (guards, func() error, error) {
	g := guards{metrics: m, inflight: throttle.NewInFlight(cfg.MaxInFlight, cfg.MaxWaiting, m.Shed), waits: claimwait.New(cfg.ClaimWait),
		replies: replybudget.New(int64(cmp.Or(cfg.MaxReplyBytesInFlight, DefaultMaxReplyBytesInFlight)))}
	var reloads []func() error
	if cfg.AuthTokens != "" {
		a, err := auth.New(cfg.AuthTokens)
		if err != nil {
			return g, nil, err
		}
		g.auth = a
		reloads = append(reloads, a.Reload)
	} else {
		log.Warn("authentication is off: every caller may act for every consumer", "listen", cfg.Listen)
	}
	if cfg.TLSCert != "" {
		certs, err := newCertReloader(cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA)
		if err != nil {
			return g, nil, err
		}
		g.certs = certs
		g.creds = credentials.NewTLS(certs.config())
		reloads = append(reloads, certs.reload)
	}
	if cfg.RateLimit > 0 {
		g.limiter = throttle.NewPerConsumer(cfg.RateLimit, cfg.RateBurst)
	}
	reload := func() error {
		var errs []error
		for _, r := range reloads {
			errs = append(errs, r())
		}
		return errors.Join(errs...)
	}
	return g, reload, nil
}

// newDedupService is the DedupService behind the guards: batch items take
// their rate-limit tokens from the same per-consumer buckets as calls.
func newDedupService(st store.Store, policies *policy.Keys, log *slog.Logger, g guards) *api.DedupService {
	opts := api.ServiceOptions{Waits: g.waits}
	if g.limiter != nil {
		opts.Items = g.limiter
	}
	return api.NewDedupServiceWith(st, policies, log, opts)
}

// handleReloads runs reload each time signals delivers, until ctx ends.
func handleReloads(ctx context.Context, signals <-chan os.Signal, reload func() error, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-signals:
			if err := reload(); err != nil {
				log.Error("reload failed; the configuration in force stays", "err", err)
			} else {
				log.Info("reloaded auth and TLS files")
			}
		}
	}
}

// serveMetrics serves /metrics, /healthz and Go's profiler (/debug/pprof/)
// on lis (bound to --metrics-listen by bindListeners), if there is one, and
// returns the address it listens on and a function that stops it. The profiler is what an operator reaches for when
// dedupd uses more CPU than expected; like the metrics it belongs on an
// address only operators can reach.
func serveMetrics(lis net.Listener, m *metrics.Metrics, hs *health.Server, log *slog.Logger) (string, func()) {
	if lis == nil {
		return "", func() {}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		resp, err := hs.Check(r.Context(), &healthpb.HealthCheckRequest{})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			http.Error(w, "NOT_SERVING", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "SERVING")
	})
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server stopped", "err", err)
		}
	}()
	return lis.Addr().String(), func() { srv.Close() }
}
