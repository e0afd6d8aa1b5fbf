// Package server assembles dedupd: it opens the configured store, wires the
// gRPC server with its interceptors, health and reflection, runs the
// reaper, and shuts all of it down in order.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// Config is everything `dedupd serve` can be told.
type Config struct {
	// Listen is the gRPC address, host:port.
	Listen string
	// DatabaseURL selects PostgreSQL/CockroachDB; empty selects the
	// embedded store in DataDir.
	DatabaseURL string
	DataDir     string
	// Embedded tunes the embedded store.
	Embedded sqlitestore.Options
	// GroupCommit writes concurrent calls together: fresh claims in one
	// multi-row INSERT on PostgreSQL, all writes in one transaction (one
	// fsync) on the embedded store. Answers are the same either way.
	GroupCommit bool
	// ReplayCacheBytes bounds the in-process cache of finished records
	// that answers their replays; zero turns it off. ReplayCacheTTL is how
	// long an entry is trusted: how late a record deleted through another
	// server may still be replayed by this one.
	ReplayCacheBytes int64
	ReplayCacheTTL   time.Duration
	// Policy holds the lease default and the retention of every consumer.
	Policy store.Policy
	Limits api.Limits
	// ReapInterval is how often expired records are deleted, ReapBatch how
	// many at most per statement. An interval of zero turns the reaper off.
	ReapInterval time.Duration
	ReapBatch    int
	// ShutdownTimeout bounds how long in-flight calls may take to finish.
	ShutdownTimeout time.Duration
}

// Validate reports the first configuration value that cannot work.
func (c Config) Validate() error {
	checks := []struct {
		ok   bool
		what string
	}{
		{c.Listen != "", "--listen is required"},
		{c.DatabaseURL != "" || c.DataDir != "", "--data-dir or --database-url is required"},
		{c.Policy.DefaultLeaseTTL > 0, "--default-lease-ttl must be positive"},
		{c.Limits.MaxLeaseTTL >= c.Policy.DefaultLeaseTTL, "--max-lease-ttl must be at least --default-lease-ttl"},
		{c.Policy.CompletedTTL > 0, "--completed-ttl must be positive"},
		{c.Policy.RejectedTTL > 0, "--rejected-ttl must be positive"},
		{c.Policy.ReleasedTTL > 0, "--released-ttl must be positive"},
		{c.Limits.MaxResultBytes > 0, "--max-result-bytes must be positive"},
		{c.ReapInterval >= 0, "--reap-interval must not be negative"},
		{c.ReapBatch > 0, "--reap-batch must be positive"},
		{c.ReplayCacheBytes >= 0, "--replay-cache-bytes must not be negative"},
		{c.ReplayCacheBytes == 0 || c.ReplayCacheTTL > 0, "--replay-cache-ttl must be positive"},
	}
	for _, check := range checks {
		if !check.ok {
			return errors.New(check.what)
		}
	}
	return nil
}

// Run serves until ctx is cancelled, then stops gracefully: the listener
// closes, in-flight calls finish (up to ShutdownTimeout), the reaper stops,
// and the store closes last, so no call is cut off half-written.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	st, err := OpenStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()

	lis, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", cfg.Listen, err)
	}
	healthSrv := health.NewServer()
	grpcSrv := newGRPCServer(cfg, log, healthSrv)
	api.Register(grpcSrv, api.NewDedupService(st, cfg.Policy, cfg.Limits, log))
	healthSrv.SetServingStatus(dedupv1.DedupService_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)

	// The reaper outlives ctx until the in-flight calls have finished, so
	// that shutdown stops things in the reverse order they started.
	reaperDone := make(chan struct{})
	reaperCtx, stopReaper := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(reaperDone)
		runReaper(reaperCtx, st, cfg.ReapInterval, cfg.ReapBatch, log)
	}()

	serveErr := make(chan error, 1)
	go func() { serveErr <- grpcSrv.Serve(lis) }()
	log.Info("dedupd serving", "listen", lis.Addr().String(), "store", storeName(cfg))

	select {
	case err = <-serveErr:
		err = fmt.Errorf("serving: %w", err)
	case <-ctx.Done():
		log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
		healthSrv.Shutdown()
		stopGracefully(grpcSrv, cfg.ShutdownTimeout, log)
	}
	stopReaper()
	<-reaperDone
	log.Info("dedupd stopped")
	return err
}

func storeName(cfg Config) string {
	if cfg.DatabaseURL != "" {
		return "postgres"
	}
	return "sqlite"
}
