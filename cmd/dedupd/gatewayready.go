package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/client"
)

// The gateway's view of dedupd: checked at start and then every
// readyInterval; while dedupd does not answer SERVING the gateway is not
// ready (its readiness path answers 503) and says why at ERROR, again
// every downLogEvery while it lasts. Keyed requests meanwhile get the
// middleware's 503 with Retry-After.
const (
	readyInterval = 2 * time.Second
	downLogEvery  = 30 * time.Second
)

// dedupdReadiness is whether dedupd answered its last health check.
type dedupdReadiness struct {
	mu    sync.Mutex
	ready bool
	cause string
}

func (r *dedupdReadiness) set(ready bool, cause string) (was bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was = r.ready
	r.ready, r.cause = ready, cause
	return was
}

func (r *dedupdReadiness) get() (bool, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ready, r.cause
}

// watch checks dedupd until ctx ends; onFirstReady runs once, the first
// time dedupd answers.
func (r *dedupdReadiness) watch(ctx context.Context, c *client.Client, addr string, logger *slog.Logger, onFirstReady func()) {
	health := healthpb.NewHealthClient(c.Conn())
	var lastDownLog time.Time
	first := true
	for {
		cctx, cancel := context.WithTimeout(ctx, readyInterval)
		resp, err := health.Check(cctx, &healthpb.HealthCheckRequest{})
		cancel()
		if ctx.Err() != nil {
			return
		}
		switch {
		case err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
			if !r.set(true, "") {
				logger.Info("dedupd reachable; gateway ready", "dedupd", addr)
				if first {
					first = false
					onFirstReady()
				}
			}
		default:
			cause := fmt.Sprint(err)
			if err == nil {
				cause = "health " + resp.GetStatus().String()
			}
			was := r.set(false, cause)
			if was || time.Since(lastDownLog) >= downLogEvery {
				lastDownLog = time.Now()
				logger.Error("cannot reach dedupd; keyed requests get 503 until it answers (retrying)", "dedupd", addr, "err", cause)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(readyInterval):
		}
	}
}

// handler answers the readiness path: 200 once dedupd answers, 503 with
// the cause and Retry-After while it does not.
func (r *dedupdReadiness) handler(addr string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready, cause := r.get(); !ready {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: cannot reach dedupd at %s: %s\n", addr, cause)
			return
		}
		fmt.Fprintln(w, "ready")
	})
}

// withReadiness serves path from ready and everything else from next.
func withReadiness(next http.Handler, path string, ready http.Handler) http.Handler {
	if path == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == path && (req.Method == http.MethodGet || req.Method == http.MethodHead) {
			ready.ServeHTTP(w, req)
			return
		}
		next.ServeHTTP(w, req)
	})
}
