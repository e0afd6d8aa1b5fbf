package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/sqlitestore"
)

// guardedServer is an in-process dedupd with the interceptor chain of
// `dedupd serve`, on a real TCP port (so TLS runs for real).
type guardedServer struct {
	addr   string
	guards guards
	reload func() error
	health *health.Server
}

// testConfig is a valid configuration for in-process servers.
func testConfig() Config {
	cfg := Config{
		Listen:       "127.0.0.1:0",
		DataDir:      "set by startGuarded",
		Policy:       store.Policy{DefaultLeaseTTL: time.Minute, CompletedTTL: time.Hour, RejectedTTL: time.Hour, ReleasedTTL: time.Hour},
		MaxInFlight:  64,
		ReapInterval: time.Hour, ReapBatch: 10, HealthInterval: time.Second,
	}
	cfg.Limits.MaxLeaseTTL, cfg.Limits.MaxResultBytes = time.Hour, 1<<10
	return cfg
}

// startGuarded serves DedupService on st (an embedded store in a temp dir
// when nil), plus an AdminService whose every method is unimplemented: the
// interceptors decide before any handler, which is what these tests check.
func startGuarded(t *testing.T, cfg Config, st store.Backend) *guardedServer {
	t.Helper()
	return startGuardedWithLog(t, cfg, st, slog.New(slog.DiscardHandler))
}

// startGuardedWithLog is startGuarded logging to log.
func startGuardedWithLog(t *testing.T, cfg Config, st store.Backend, log *slog.Logger) *guardedServer {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if st == nil {
		sq, err := sqlitestore.Open(context.Background(), t.TempDir(), sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sq.Close() })
		st = sq
	}
	g, reload, err := newGuards(cfg, metrics.New(), log)
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	srv := newGRPCServer(cfg, log, hs, g)
	policies := newPolicies(cfg, st).Keys
	api.Register(srv, newDedupService(st, policies, log, g))
	api.RegisterAdmin(srv, api.NewAdminService(st, policies, log))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }() // returns once stopped
	t.Cleanup(srv.Stop)
	return &guardedServer{addr: lis.Addr().String(), guards: g, reload: reload, health: hs}
}

// dial connects without TLS unless opts say otherwise.
func (s *guardedServer) dial(t *testing.T, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(s.addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// withToken returns a context that sends token as a bearer token.
func withToken(token string) context.Context {
	ctx := context.Background()
	if token == "" {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

func sha256Hex(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// reasonOf returns the ErrorInfo reason of err, "" if it has none.
func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// retryDelay returns the RetryInfo delay of err, or -1 if it has none.
func retryDelay(err error) time.Duration {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			return info.GetRetryDelay().AsDuration()
		}
	}
	return -1
}
