package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/dedupd/dedupd/server"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
	"github.com/dedupd/dedupd/server/tracing"
)

// flushTraces sends the spans still queued, for at most a few seconds: a
// collector that is down must not hold up the exit.
func flushTraces(tp *sdktrace.TracerProvider, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		log.Warn("flushing traces", "err", err)
	}
}

func newServeCommand() *cobra.Command {
	var cfg server.Config
	var logs logFlags
	var embeddedSync, reaper string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the dedup.v1 gRPC API",
		Long: `Serve the dedup.v1 gRPC API, with gRPC health and server reflection.

With no --database-url the embedded store keeps its data in --data-dir and
migrates itself; only one dedupd may use a data directory at a time. With
--database-url (PostgreSQL or CockroachDB) the schema must be migrated first
with 'dedupd migrate'.

Every flag can also be set through the environment as DEDUPD_<FLAG>, for
example DEDUPD_DATABASE_URL or DEDUPD_COMPLETED_TTL.

OpenTelemetry tracing is off unless the standard OTEL_* environment asks for
it, e.g. OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317 (OTLP over gRPC;
see docs/operations.md).`,
		Example: `  dedupd serve
  dedupd serve --listen 127.0.0.1:7070 --data-dir /var/lib/dedupd
  dedupd serve --database-url postgres://dedupd@db:5432/dedupd --completed-ttl 72h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logs.logger()
			if err != nil {
				return err
			}
			if cfg.Embedded.Sync, err = sqlitestore.ParseSync(embeddedSync); err != nil {
				return fmt.Errorf("--embedded-sync: %w", err)
			}
			if cfg.ReaperOff, err = parseReaper(reaper); err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			reload := make(chan os.Signal, 1)
			signal.Notify(reload, syscall.SIGHUP)
			defer signal.Stop(reload)
			cfg.Reload = reload
			tuneGC(log, cfg.ReplayCacheBytes)
			tp, err := tracing.FromEnv(ctx, log)
			if err != nil {
				return err
			}
			if tp != nil {
				cfg.TracerProvider = tp
				defer flushTraces(tp, log)
			}
			return server.Run(ctx, cfg, log)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:7070", "gRPC listen address")
	f.StringVar(&cfg.HTTPListen, "http-listen", "", "address serving the same API over HTTP/1.1 and HTTP/2: Connect with JSON (curl), gRPC-Web (docs/http.md); same auth, TLS and limits as --listen; empty turns it off")
	f.StringSliceVar(&cfg.HTTPAllowedHosts, "http-allowed-hosts", nil, "Host names --http-listen answers besides localhost, *.localhost and IP addresses, comma-separated: a name, .example.com for it and every name under it, or * for any; others are refused 403 HOST_NOT_ALLOWED, so that a web page cannot reach the listener by DNS rebinding. Checked when auth is off, and with --auth-tokens only when given (docs/http.md)")
	f.StringVar(&cfg.ReadyFile, "ready-file", "", "once serving, write the bound gRPC address (first line; then \"metrics ADDR\" with --metrics-listen and \"http ADDR\" with --http-listen) to this file, atomically; removed on exit. Lets scripts use --listen 127.0.0.1:0")
	f.StringVar(&cfg.DataDir, "data-dir", "dedupd-data", "directory of the embedded store (used when --database-url is empty)")
	f.StringVar(&cfg.EmbeddedEngine, "embedded-engine", server.EngineAuto, "engine of the embedded store: auto (the one already in --data-dir; a new directory gets "+server.DefaultEmbeddedEngine+", or sqlite with --embedded-sync normal), sqlite or pebble (docs/operations.md, \"The embedded store: choosing its engine\")")
	f.StringVar(&embeddedSync, "embedded-sync", "full", "embedded store durability: full (fsync each commit; survives power loss) or normal (survives a process crash only; about 3x the write rate; SQLite only: a new --data-dir then gets SQLite, and a Pebble one refuses it)")
	f.BoolVar(&cfg.GroupCommit, "group-commit", true, "write concurrent calls together (one multi-row INSERT on PostgreSQL, one transaction and fsync on the embedded store); answers are the same either way")
	f.Int64Var(&cfg.ReplayCacheBytes, "replay-cache-bytes", 32<<20, "memory for finished records kept to answer their replays without the database; 0 turns the cache off")
	f.DurationVar(&cfg.ReplayCacheTTL, "replay-cache-ttl", 10*time.Second, "longest a cached record is trusted: how late a record deleted through another dedupd sharing the database may still be replayed here")
	f.StringVar(&cfg.DatabaseURL, "database-url", "", "PostgreSQL or CockroachDB URL, e.g. postgres://user@host:5432/db")
	f.DurationVar(&cfg.Policy.DefaultLeaseTTL, "default-lease-ttl", 30*time.Second, "lease of a claim that names none")
	f.DurationVar(&cfg.Limits.MaxLeaseTTL, "max-lease-ttl", time.Hour, "longest lease a claim may ask for")
	f.DurationVar(&cfg.Policy.CompletedTTL, "completed-ttl", 24*time.Hour, "how long a completed outcome is kept; longer than your longest redelivery window")
	f.DurationVar(&cfg.Policy.RejectedTTL, "rejected-ttl", 24*time.Hour, "how long a terminal rejection is kept")
	f.DurationVar(&cfg.Policy.ReleasedTTL, "released-ttl", 24*time.Hour, "how long a released claim, or a pending one whose lease ran out, is kept")
	f.IntVar(&cfg.Limits.MaxResultBytes, "max-result-bytes", 64<<10, "largest result (or rejection detail) a caller may store, in bytes")
	f.IntVar(&cfg.Limits.MaxParkPayloadBytes, "max-park-payload-bytes", api.DefaultMaxParkPayloadBytes,
		fmt.Sprintf("largest payload a stream claim with park may store, in bytes, at most %d", api.MaxParkPayloadCeiling))
	f.Int64Var(&cfg.Limits.MaxParkedBytesPerConsumer, "max-parked-bytes-per-consumer", 256<<20,
		"payload bytes one consumer may hold parked over all its streams; past it a park is PARK_FULL (0: no bound)")
	f.DurationVar(&cfg.StreamTTL, "stream-ttl", store.DefaultStreamTTL, "how long an idle stream (StreamService) is kept, unless its consumer's stream policy says otherwise; longer than the latest redelivery you expect")
	f.IntVar(&cfg.Limits.MaxBatchItems, "max-batch-items", api.DefaultMaxBatchItems,
		fmt.Sprintf("most items in one batch call (ClaimBatch, FinishBatch, ExtendLeaseBatch, LookupBatch), at most %d", api.MaxBatchItemsCeiling))
	f.DurationVar(&cfg.PolicyCacheTTL, "policy-cache-ttl", 5*time.Second, "how long a consumer's policy is cached; a change made through another replica applies within it (0 reads it on every call)")
	f.StringVar(&reaper, "reaper", "on", "on: delete expired records every --reap-interval; off: leave them to the database (CockroachDB row-level TTL, see docs/cockroachdb.md)")
	f.DurationVar(&cfg.ReapInterval, "reap-interval", 30*time.Second, "how often expired records are deleted; 0 turns the reaper off")
	f.DurationVar(&cfg.LeaseSampleInterval, "lease-sample-interval", 30*time.Second, "how often the claims in flight are summed up for the lease metrics (dedupd_claims_in_flight, dedupd_oldest_claim_idle_seconds); it reads only their index; 0 turns it off")
	f.IntVar(&cfg.ReapBatch, "reap-batch", 1000, "most records the reaper deletes per statement")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", 30*time.Second, "how long in-flight calls may run after SIGTERM")
	f.StringVar(&cfg.AuthTokens, "auth-tokens", "", "YAML/JSON file of token hashes and client certificates with the consumers each may use (see docs/operations.md); reloaded on SIGHUP")
	f.BoolVar(&cfg.InsecureNoAuth, "insecure-no-auth", false, "serve without --auth-tokens on a non-loopback address; anyone who reaches it may act for any consumer and call AdminService (policies, deletes, purges)")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate chain to serve TLS with; reloaded on SIGHUP")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key of --tls-cert")
	f.StringVar(&cfg.TLSClientCA, "tls-client-ca", "", "PEM CA certificates; when set, clients must present a certificate they signed (mutual TLS)")
	f.IntVar(&cfg.MaxMessageBytes, "max-message-bytes", 0, "largest request message accepted, in bytes; 0 means room for the largest result a policy may allow (16 MiB + 64 KiB)")
	f.Float64Var(&cfg.RateLimit, "rate-limit", 0, "calls per second each consumer may make; 0 turns the limit off")
	f.IntVar(&cfg.RateBurst, "rate-burst", 0, "calls a consumer may make at once above --rate-limit; 0 means ceil(--rate-limit)")
	f.BoolVar(&cfg.LogAllCalls, "log-all-calls", false, "log every call at INFO (as --log-level debug does); otherwise only failed calls, rate-limited per method and code, and slow ones")
	f.DurationVar(&cfg.LogSlowCalls, "log-slow-calls", 250*time.Millisecond, "log unary calls that take at least this long beyond the wait they asked for (a claim's wait), at WARN; streams are never slow; 0 logs none for being slow")
	f.IntVar(&cfg.MaxInFlight, "max-inflight", 1024, "calls running at once; more are refused at once with RESOURCE_EXHAUSTED (OVERLOADED)")
	f.IntVar(&cfg.MaxConnections, "max-connections", server.DefaultMaxConnections, "client connections open at once; one more waits to be accepted until one closes")
	f.IntVar(&cfg.MaxReplyBytesInFlight, "max-reply-bytes-in-flight", server.DefaultMaxReplyBytesInFlight, "most bytes of replies encoded and not yet read by their callers, all calls together (docs/operations.md); a reply that finds no room within 500ms fails RESOURCE_EXHAUSTED (OVERLOADED)")
	f.IntVar(&cfg.MaxWaiting, "max-waiting", server.DefaultMaxWaiting, "calls arrived behind --max-inflight (their request being read and checked); a call past both is refused OVERLOADED as it arrives, before its request is read")
	f.IntVar(&cfg.MaxConnectionsPerPeer, "max-connections-per-peer", server.DefaultMaxConnectionsPerPeer, "client connections one address (IPv6: one /64) may hold open; one more is closed at once; at or above --max-connections it is off")
	f.DurationVar(&cfg.HandshakeTimeout, "handshake-timeout", server.DefaultHandshakeTimeout, "time a new connection has to finish TLS and send the HTTP/2 preface and SETTINGS before it is closed")
	f.DurationVar(&cfg.MaxConnectionIdle, "max-connection-idle", server.DefaultMaxConnectionIdle, "a connection with no call open for this long is sent GOAWAY (the client reconnects when it next calls)")
	f.IntVar(&cfg.MaxConcurrentStreams, "max-concurrent-streams", server.DefaultMaxConcurrentStreams, "calls open at once on one connection; a client queues more")
	f.IntVar(&cfg.Limits.MaxPageBytes, "max-page-bytes", api.PageBytesCeiling, "most bytes of records in one ListRecords page (a larger record comes alone); at most 4 MiB less 64 KiB, so that a client left at its defaults accepts every page")
	f.DurationVar(&cfg.ClaimWait.MaxWait, "max-claim-wait", claimwait.DefaultMaxWait, "longest a claim's wait (ClaimRequest.wait) may hold the call while another caller holds the key; longer waits are clamped to it; 0 answers every claim at once")
	f.DurationVar(&cfg.ClaimWait.Poll, "claim-wait-poll", claimwait.DefaultPoll, "longest a waiting claim goes without reading the store again: how late it sees an outcome stored through another replica (one served here wakes it at once)")
	f.IntVar(&cfg.ClaimWait.PerKey, "max-claim-waiters-per-key", claimwait.DefaultPerKey, "waiting claims at once on one key or stream; past it a claim is answered IN_PROGRESS at once")
	f.IntVar(&cfg.ClaimWait.PerConsumer, "max-claim-waiters-per-consumer", claimwait.DefaultPerConsumer, "waiting claims at once of one consumer; past it a claim is answered IN_PROGRESS at once")
	f.IntVar(&cfg.ClaimWait.PerServer, "max-claim-waiters", claimwait.DefaultPerServer, "waiting claims at once on this server; past it a claim is answered IN_PROGRESS at once")
	f.StringVar(&cfg.MetricsListen, "metrics-listen", "", "address serving Prometheus /metrics and /healthz, e.g. 127.0.0.1:9090; empty turns it off")
	f.DurationVar(&cfg.HealthInterval, "health-interval", 2*time.Second, "how often the store is pinged; health is NOT_SERVING while it does not answer")
	logs.register(f)
	return cmd
}

// parseReaper reads --reaper and reports whether it turns the reaper off.
func parseReaper(s string) (off bool, err error) {
	switch s {
	case "on":
		return false, nil
	case "off":
		return true, nil
	}
	return false, fmt.Errorf("--reaper must be on or off, not %q", s)
}

// defaultGCPercent is dedupd's garbage collector target unless GOGC says
// otherwise. Each call allocates a little and keeps nothing, so the live
// heap is small (mostly the replay cache) and Go's default of 100 collects
// far more often than memory needs: at 400, claims cost about 20% less CPU
// (docs/performance.md). The soft memory limit, unless GOMEMLIMIT says
// otherwise, keeps that from growing the process without bound: near it the
// collector runs as often as it must.
const (
	defaultGCPercent   = 400
	memoryLimitHeadway = 128 << 20 // on top of the replay cache
)

func tuneGC(log *slog.Logger, replayCacheBytes int64) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(defaultGCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(replayCacheBytes + memoryLimitHeadway)
	}
	// SetMemoryLimit with a negative value only reads the limit.
	log.Debug("garbage collector tuned", "memory_limit", debug.SetMemoryLimit(-1))
}
