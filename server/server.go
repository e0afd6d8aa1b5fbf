// Package server is dedupd's composition root: it opens the configured
// store, wires the gRPC and HTTP servers with their interceptors, health
// and reflection, builds the process's one set of policy resolvers
// (server/policy) for the services and the background jobs
// (server/jobs), starts the jobs, and shuts all of it down in order.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/dedupd/dedupd/internal/loopback"
	"github.com/dedupd/dedupd/internal/version"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/hostcheck"
	"github.com/dedupd/dedupd/server/jobs"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/store/stack"
)

// Config is everything `dedupd serve` can be told.
type Config struct {
	// Listen is the gRPC address, host:port.
	Listen string
	// HTTPListen, when set, serves the same services over HTTP/1.1 and
	// HTTP/2 there: Connect (JSON or protobuf) and gRPC-Web
	// (docs/http.md). Same handlers, guards and TLS as Listen.
	HTTPListen string
	// HTTPAllowedHosts are the Host names the HTTP listener answers
	// besides localhost, *.localhost and IP literals (server/hostcheck):
	// the defence against DNS rebinding, applied when auth is off, and
	// with auth only when the list is given (httpHosts).
	HTTPAllowedHosts []string
	// ReadyFile, when set, is written once the server serves: the bound
	// gRPC address on the first line (dialable even when Listen asks for
	// port 0), then "metrics <address>" with MetricsListen and
	// "http <address>" with HTTPListen, each on a line of its own.
	// It appears whole (written beside, then renamed), never before the
	// server serves, not at all when startup fails, and is removed when
	// the server stops.
	ReadyFile string
	// DatabaseURL selects PostgreSQL/CockroachDB; empty selects the
	// embedded store in DataDir.
	DatabaseURL string
	DataDir     string
	// EmbeddedEngine chooses the embedded store's engine: EngineAuto (or
	// empty) serves the engine already in DataDir, and a new directory
	// with DefaultEmbeddedEngine (SQLite when Embedded.Sync asks for what
	// only SQLite offers); EngineSQLite or EnginePebble insist on one
	// (see EmbeddedEngine).
	EmbeddedEngine string
	// Embedded tunes the embedded store on SQLite.
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
	Limits policy.Limits
	// StreamTTL is how long an idle stream is kept when the consumer's
	// stream policy names no TTL; zero means store.DefaultStreamTTL.
	StreamTTL time.Duration
	// PolicyCacheTTL bounds how long a consumer's stored policy is cached:
	// a change through another replica is seen within it. Zero reads the
	// policy on every call.
	PolicyCacheTTL time.Duration
	// ReaperOff runs no reaper at all (--reaper=off), for databases that
	// delete expired rows themselves, such as CockroachDB with row-level
	// TTL (docs/cockroachdb.md).
	ReaperOff bool
	// ReapInterval is how often expired records are deleted, ReapBatch how
	// many at most per statement. An interval of zero turns the reaper off.
	ReapInterval time.Duration
	ReapBatch    int
	// LeaseSampleInterval is how often the claims in flight are summed up
	// for the lease metrics (dedupd_claims_in_flight, ...); zero turns the
	// sampling off.
	LeaseSampleInterval time.Duration
	// ShutdownTimeout bounds how long in-flight calls may take to finish.
	ShutdownTimeout time.Duration

	// AuthTokens is the auth file (see auth.File); empty turns auth off,
	// which is allowed only on a loopback Listen or with InsecureNoAuth.
	AuthTokens     string
	InsecureNoAuth bool
	// TLSCert and TLSKey turn TLS on; TLSClientCA requires client
	// certificates signed by it (mutual TLS).
	TLSCert, TLSKey, TLSClientCA string
	// MaxMessageBytes bounds a request message; 0 leaves room for the
	// largest result any consumer's policy may allow
	// (api.MaxResultBytesCeiling plus the rest of a request).
	MaxMessageBytes int
	// RateLimit is the calls per second each consumer may make (0: no
	// limit), RateBurst how many at once (0: ceil(RateLimit)).
	RateLimit float64
	RateBurst int
	// MaxInFlight bounds the calls running at once, MaxWaiting the calls
	// arrived behind them; a call past both is refused OVERLOADED as its
	// stream opens (throttle.InFlight). Zero lets none wait: a call past
	// MaxInFlight is refused as it arrives.
	MaxInFlight int
	MaxWaiting  int
	// MaxConnections bounds the client connections open at once; one more
	// waits to be accepted until one closes. MaxConcurrentStreams bounds
	// the calls open at once on one connection; a client queues more.
	// MaxReplyBytesInFlight bounds what replies that callers do not read
	// can hold (docs/operations.md). Zero takes the default.
	MaxConnections       int
	MaxConcurrentStreams int
	// MaxReplyBytesInFlight bounds the bytes of replies encoded and not
	// yet written to their callers, whatever the calls
	// (server/replybudget); a reply that finds no room within a moment
	// fails RESOURCE_EXHAUSTED (OVERLOADED). Zero takes the default.
	MaxReplyBytesInFlight int
	// MaxConnectionsPerPeer is the share of MaxConnections one address
	// (one IPv6 /64) may hold; one more is closed at once. At or above
	// MaxConnections it is off. HandshakeTimeout bounds how long a new
	// connection may take to send the HTTP/2 preface and SETTINGS (after
	// TLS), MaxConnectionIdle how long one may stay open with no call.
	// Zero takes the default (docs/operations.md, "Connections").
	MaxConnectionsPerPeer int
	HandshakeTimeout      time.Duration
	MaxConnectionIdle     time.Duration
	// LogAllCalls logs every call, as a DEBUG logger does; otherwise only
	// failed calls (rate-limited) and calls slower than LogSlowCalls are
	// (0: none for being slow).
	LogAllCalls  bool
	LogSlowCalls time.Duration
	// ClaimWait bounds the claims that wait for an in-flight outcome
	// (server/claimwait); MaxWait zero turns waiting off.
	ClaimWait claimwait.Options
	// MetricsListen is the address of /metrics and /healthz; empty: off.
	MetricsListen string
	// HealthInterval is how often the store is pinged for health.
	HealthInterval time.Duration
	// TracerProvider, when set, traces every call (otelgrpc) and every
	// store operation and group-commit batch (storetrace); nil installs
	// nothing. dedupd serve sets it from the OTEL_* environment
	// (tracing.FromEnv).
	TracerProvider trace.TracerProvider
	// Reload, when it delivers, makes the server read the auth file and
	// the TLS files again (SIGHUP).
	Reload <-chan os.Signal
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
		{c.Limits.MaxResultBytes <= api.MaxResultBytesCeiling, fmt.Sprintf("--max-result-bytes must be at most %d", api.MaxResultBytesCeiling)},
		{c.PolicyCacheTTL >= 0, "--policy-cache-ttl must not be negative"},
		{c.StreamTTL >= 0 && c.StreamTTL <= api.MaxTTLCeiling, "--stream-ttl must be between 0 and ten years"},
		{c.Limits.MaxParkPayloadBytes >= 0 && c.Limits.MaxParkPayloadBytes <= api.MaxParkPayloadCeiling,
			fmt.Sprintf("--max-park-payload-bytes must be between 1 and %d", api.MaxParkPayloadCeiling)},
		{c.Limits.MaxParkedBytesPerConsumer >= 0, "--max-parked-bytes-per-consumer must not be negative"},
		{c.ReapInterval >= 0, "--reap-interval must not be negative"},
		{c.ReapBatch > 0, "--reap-batch must be positive"},
		{c.LeaseSampleInterval >= 0, "--lease-sample-interval must not be negative"},
		{c.AuthTokens != "" || c.InsecureNoAuth || loopback.Target(c.Listen),
			"refusing to serve without authentication on " + c.Listen + ": give --auth-tokens, listen on a loopback address, or pass --insecure-no-auth"},
		{c.AuthTokens != "" || c.InsecureNoAuth || c.HTTPListen == "" || loopback.Target(c.HTTPListen),
			"refusing to serve without authentication on --http-listen " + c.HTTPListen + ": give --auth-tokens, listen on a loopback address, or pass --insecure-no-auth"},
		{(c.TLSCert == "") == (c.TLSKey == ""), "--tls-cert and --tls-key go together"},
		{c.TLSClientCA == "" || c.TLSCert != "", "--tls-client-ca needs --tls-cert and --tls-key"},
		{c.MaxMessageBytes == 0 || c.MaxMessageBytes >= c.Limits.MaxResultBytes+messageOverhead,
			"--max-message-bytes must be at least --max-result-bytes + 65536"},
		{c.RateLimit >= 0 && c.RateBurst >= 0, "--rate-limit and --rate-burst must not be negative"},
		{c.MaxInFlight > 0, "--max-inflight must be positive"},
		{c.MaxWaiting >= 0, "--max-waiting must not be negative"},
		{c.MaxConnections >= 0, "--max-connections must be positive"},
		{c.MaxReplyBytesInFlight >= 0, "--max-reply-bytes-in-flight must be positive"},
		{c.MaxConnectionsPerPeer >= 0, "--max-connections-per-peer must be positive"},
		{c.HandshakeTimeout >= 0, "--handshake-timeout must be positive"},
		{c.MaxConnectionIdle >= 0, "--max-connection-idle must be positive"},
		{c.MaxConcurrentStreams >= 0 && c.MaxConcurrentStreams <= math.MaxUint32, "--max-concurrent-streams must be positive"},
		{c.Limits.MaxPageBytes >= 0 && c.Limits.MaxPageBytes <= api.PageBytesCeiling,
			fmt.Sprintf("--max-page-bytes must be positive and at most %d, so that a client left at its defaults accepts every page", api.PageBytesCeiling)},
		{c.Limits.MaxBatchItems >= 0 && c.Limits.MaxBatchItems <= api.MaxBatchItemsCeiling,
			fmt.Sprintf("--max-batch-items must be between 1 and %d", api.MaxBatchItemsCeiling)},
		{c.HealthInterval > 0, "--health-interval must be positive"},
		{c.LogSlowCalls >= 0, "--log-slow-calls must not be negative"},
		{c.ReplayCacheBytes >= 0, "--replay-cache-bytes must not be negative"},
		{c.ClaimWait.MaxWait >= 0, "--max-claim-wait must not be negative"},
		{c.ClaimWait.Poll >= 0, "--claim-wait-poll must not be negative"},
		{c.ClaimWait.PerKey >= 0 && c.ClaimWait.PerConsumer >= 0 && c.ClaimWait.PerServer >= 0,
			"--max-claim-waiters, --max-claim-waiters-per-consumer and --max-claim-waiters-per-key must not be negative"},
		{c.ReplayCacheBytes == 0 || c.ReplayCacheTTL > 0, "--replay-cache-ttl must be positive"},
	}
	for _, check := range checks {
		if !check.ok {
			return errors.New(check.what)
		}
	}
	_, err := hostcheck.New(c.HTTPAllowedHosts)
	return err
}

// Run serves until ctx is cancelled, then stops gracefully: the listener
// closes, in-flight calls finish (up to ShutdownTimeout), the reaper and
// the health watcher stop, and the store closes last, so no call is cut off
// half-written.
func Run(ctx context.Context, cfg Config, log *slog.Logger) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m := metrics.New()
	build := version.Get()
	m.ExportBuild(build)
	g, reload, err := newGuards(cfg, m, log)
	if err != nil {
		return err
	}
	m.ExportClaimWaits(g.waits.Waiting, g.waits.Refused)
	lns, err := bindListeners(ctx, cfg, m, log)
	if err != nil {
		return err
	}
	lis := lns.grpc
	backend, err := OpenStore(ctx, cfg, log, StoreHooks{OnRetry: m.StoreRetry, Commits: m.Commits})
	if err != nil {
		lns.close()
		return err
	}
	m.ExportEngine(backend)
	healthSrv := newHealthService()
	watcher := jobs.NewHealthWatcher(healthSrv.Server, healthServices, cfg.HealthInterval, cfg.Policy, m, log)
	observed := stack.Build(backend, storeStack(cfg, m, watcher.Observe, g.waits))
	defer observed.Close() // closes backend too

	policies := newPolicies(cfg, observed)
	grpcSrv := newServices(cfg, log, healthSrv, g, observed, policies)
	httpSrv, err := newHTTPAPI(cfg, g, grpcSrv, lns.http, log)
	if err != nil {
		lns.close()
		return err
	}
	metricsAddr, stopMetrics := serveMetrics(lns.metrics, m, healthSrv.Server, log)
	defer stopMetrics()

	// The first ping decides the status the server starts with; a store
	// that does not answer yet leaves it NOT_SERVING until it does.
	watcher.Check(ctx, observed)

	// The background work outlives ctx until the in-flight calls have
	// finished, so that shutdown stops things in the reverse order they
	// started.
	bgCtx, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var bg sync.WaitGroup
	reaper := jobs.ReaperOptions{Off: cfg.ReaperOff, Interval: cfg.ReapInterval, Batch: cfg.ReapBatch}
	bg.Go(func() { jobs.RunReaper(bgCtx, observed, policies.Streams, reaper, m, log) })
	bg.Go(func() { jobs.RunLeaseSampler(bgCtx, observed, cfg.LeaseSampleInterval, m, log) })
	bg.Go(func() { watcher.Run(bgCtx, observed) })
	bg.Go(func() { handleReloads(bgCtx, cfg.Reload, reload, log) })

	serveErr := make(chan error, 2)
	go func() { serveErr <- fmt.Errorf("serving: %w", grpcSrv.Serve(lis)) }()
	httpSrv.start(serveErr)
	log.Info("dedupd serving", "version", build.String(), "listen", lis.Addr().String(), "http", httpSrv.addr(),
		"store", storeName(cfg), "metrics", metricsAddr, "auth", g.auth != nil, "tls", g.creds != nil)
	if err = writeReadyFile(cfg.ReadyFile, lis.Addr().String(), metricsAddr, httpSrv.addr()); err != nil {
		httpSrv.close()
		grpcSrv.Stop()
	} else {
		if cfg.ReadyFile != "" {
			defer os.Remove(cfg.ReadyFile)
		}
		select {
		case err = <-serveErr:
			httpSrv.close()
			grpcSrv.Stop()
		case <-ctx.Done():
			log.Info("shutting down", "timeout", cfg.ShutdownTimeout)
			healthSrv.shutdown() // NOT_SERVING, then Watch streams end
			g.waits.Stop()       // waiting claims answer now, not at the end of their wait
			deadline := time.Now().Add(cfg.ShutdownTimeout)
			httpSrv.shutdown(deadline, log) // first: GracefulStop cancels HTTP calls
			stopGracefully(grpcSrv, time.Until(deadline), log)
		}
	}
	stopBackground()
	bg.Wait()
	log.Info("dedupd stopped")
	return err
}

// newPolicies builds the process's one set of policy resolvers on st.
// Every service and the gap watch must share it: a policy changed through
// the API is invalidated only in these, and is then what this server's
// next call and next gap-watch pass apply.
func newPolicies(cfg Config, st policy.Reader) policy.Resolvers {
	return policy.NewResolvers(st, policy.Defaults{Policy: cfg.Policy, Limits: cfg.Limits}, cfg.StreamTTL, cfg.PolicyCacheTTL)
}

// newServices builds the gRPC server with every service on st, which the
// caller has built with storeStack (the replay cache, the store metrics
// and tracing, the claim-wait notification): key and stream calls alike
// go through them. policies are the process's resolvers (newPolicies).
func newServices(cfg Config, log *slog.Logger, healthSrv healthpb.HealthServer, g guards, st store.Backend, policies policy.Resolvers) *grpc.Server {
	grpcSrv := newGRPCServer(cfg, log, healthSrv, g)
	api.Register(grpcSrv, newDedupService(st, policies.Keys, log, g))
	api.RegisterAdmin(grpcSrv, api.NewAdminService(st, policies.Keys, log))
	api.RegisterStreams(grpcSrv, api.NewStreamService(st, policies.Streams, log).WaitWith(g.waits),
		api.NewStreamAdminService(st, policies.Streams, log))
	g.metrics.GRPC.InitializeMetrics(grpcSrv)
	return grpcSrv
}

func storeName(cfg Config) string {
	if cfg.DatabaseURL != "" {
		return "postgres"
	}
	// Asked after the store opened, so the directory says which it is.
	engine, err := EmbeddedEngine(cfg)
	if err != nil {
		return "embedded"
	}
	return engine
}
