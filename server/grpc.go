package server

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	grpcauth "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/auth"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/selector"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/dedupd/dedupd/server/accesslog"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/auth"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/loglimit"
	"github.com/dedupd/dedupd/server/metrics"
	"github.com/dedupd/dedupd/server/replybudget"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/throttle"
	"github.com/dedupd/dedupd/server/tracing"
)

// messageOverhead is room for everything in a request besides the result.
const messageOverhead = 64 << 10

// Defaults of Config.MaxConnections and Config.MaxConcurrentStreams (the
// flags' defaults). 100 streams is the least HTTP/2 advises a server to
// allow; docs/operations.md works out the memory they bound.
const (
	DefaultMaxConnections       = 256
	DefaultMaxConcurrentStreams = 100
	// DefaultMaxReplyBytesInFlight is the default of
	// Config.MaxReplyBytesInFlight: room for 64 of the largest batch
	// replies at once.
	DefaultMaxReplyBytesInFlight = 256 << 20
)

// DefaultMaxWaiting is --max-waiting: how many calls may be between their
// arrival and the in-flight bound, whose refusal is then immediate. Enough
// that a burst of the callers the default 64 stream workers serve is read
// and answered by the bound itself, with a reason in its message; past it,
// refusals cost the server only a header frame.
const DefaultMaxWaiting = 64

// guards are what stands between a caller and a handler; nil fields are off.
type guards struct {
	auth     *auth.Authorizer
	limiter  *throttle.PerConsumer
	inflight *throttle.InFlight
	replies  *replybudget.Budget
	metrics  *metrics.Metrics
	creds    credentials.TransportCredentials
	certs    *certReloader // the files behind creds, for the HTTP listener
	// waits holds the claims waiting for an in-flight outcome, which give
	// their in-flight slot back while they sleep (server/claimwait).
	waits *claimwait.Registry
}

// maxMessageBytes is --max-message-bytes, or by default room for the
// largest result any consumer's policy may allow, so that too large a
// result is refused by validation, naming the field and the consumer's
// limit, not by the transport.
func maxMessageBytes(cfg Config) int {
	if cfg.MaxMessageBytes > 0 {
		return cfg.MaxMessageBytes
	}
	return api.MaxResultBytesCeiling + messageOverhead
}

// streamWorkers is how many goroutines serve calls and are kept between
// them. A new goroutine per call starts with a small stack and grows it
// (runtime.newstack, copystack) on every call, which cost about a sixth
// of a replay's CPU; a kept worker has grown its stack once. The number
// covers the callers that are usually in flight at once; past it (or while
// long-lived streams such as health Watch hold workers), grpc-go starts a
// goroutine per call as before, so it bounds nothing and blocks nothing.
const streamWorkers = 64

// notHealth selects every call but health checks: a load balancer or
// orchestrator must be able to ask without a credential, and must get an
// answer even when the server sheds load.
var notHealth = selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
	return c.Service != healthpb.Health_ServiceDesc.ServiceName
})

// notDiagnostic selects every call but health checks and server reflection:
// those are how operators and tools look at a server, and reflection streams
// stay open for as long as a tool is connected, so they must not take the
// in-flight slots that bound real work.
var notDiagnostic = selector.MatchFunc(func(_ context.Context, c interceptors.CallMeta) bool {
	return !diagnostic(c.Service)
})

func diagnostic(service string) bool {
	return service == healthpb.Health_ServiceDesc.ServiceName || strings.HasPrefix(service, "grpc.reflection.")
}

// diagnosticMethod is diagnostic for a full method name, /service/method.
func diagnosticMethod(fullMethod string) bool {
	service, _, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	return diagnostic(service)
}

// newGRPCServer builds the server with its interceptors, outermost first:
//
//  1. consumer: puts the request's consumer in the context for the rest;
//  2. gRPC metrics (grpc_server_*) and domain metrics see every call with its
//     final code, refusals included;
//  3. the access log: failed calls (rate-limited per method and code), slow
//     calls, or every call when asked;
//  4. the in-flight bound (not for health or reflection), cheapest refusal
//     first; a call past the calls in flight and those waiting is refused
//     earlier still, as its stream opens (InTapHandle), before any of
//     these run;
//  5. the reply budget (not for health or reflection): a reply takes its
//     bytes before it is encoded, and waits for them inside its call's
//     in-flight slot;
//  6. auth (not for health): who calls, and for which consumer;
//  7. the per-consumer rate limit, after auth so that a caller without a
//     credential cannot use up a consumer's rate;
//  8. recovery, innermost: a panic in a handler becomes INTERNAL.
//
// The streaming chain is shorter on purpose: it has no consumer
// interceptor, no domain metrics and no per-consumer rate limit. The only
// streaming calls are operators' (AdminService.Purge), which auth admits
// for admin grants alone whatever the consumer, which the rate limit
// exempts as it does every admin call (throttle's limited), and which have
// no claims or refusals for domain metrics to count. A streaming call on a
// consumer-facing service would need all three first; TestStreamingCallsAreAdminOnly
// fails when one appears.
func newGRPCServer(cfg Config, log *slog.Logger, healthSrv healthpb.HealthServer, g guards) *grpc.Server {
	calls := accesslog.New(log, accesslog.Options{All: cfg.LogAllCalls, Slow: cfg.LogSlowCalls, MaxWait: cfg.ClaimWait.MaxWait,
		Failed: loglimit.New(failedCallLinesPerSecond, failedCallLinesBurst)})
	unary := []grpc.UnaryServerInterceptor{
		consumer.UnaryServerInterceptor(),
		g.metrics.GRPC.UnaryServerInterceptor(),
		g.metrics.UnaryServerInterceptor(),
		calls.UnaryServerInterceptor(),
	}
	stream := []grpc.StreamServerInterceptor{
		g.metrics.GRPC.StreamServerInterceptor(),
		calls.StreamServerInterceptor(),
	}
	if g.inflight != nil {
		unary = append(unary, selector.UnaryServerInterceptor(g.inflight.UnaryServerInterceptor(), notDiagnostic))
		stream = append(stream, selector.StreamServerInterceptor(g.inflight.StreamServerInterceptor(), notDiagnostic))
	}
	if g.replies != nil {
		unary = append(unary, selector.UnaryServerInterceptor(g.replies.UnaryServerInterceptor(replyPlan), notDiagnostic))
	}
	if g.auth != nil {
		unary = append(unary, selector.UnaryServerInterceptor(grpcauth.UnaryServerInterceptor(g.auth.AuthFunc), notHealth))
		stream = append(stream, selector.StreamServerInterceptor(grpcauth.StreamServerInterceptor(g.auth.AuthFunc), notHealth))
	}
	if g.limiter != nil {
		unary = append(unary, throttle.UnaryServerInterceptor(g.limiter))
	}
	recoverWith := recovery.WithRecoveryHandlerContext(recoverPanic(log, g.metrics))
	unary = append(unary, recovery.UnaryServerInterceptor(recoverWith))
	stream = append(stream, recovery.StreamServerInterceptor(recoverWith))

	opts := append(connectionOptions(cfg),
		grpc.NumStreamWorkers(streamWorkers),
		grpc.MaxRecvMsgSize(maxMessageBytes(cfg)),
		// A reply is held whole until the client reads it, so every reply
		// is capped, as a request is: a page by its byte budget, a single
		// record by the largest result a policy may allow.
		grpc.MaxSendMsgSize(maxMessageBytes(cfg)),
		grpc.MaxConcurrentStreams(uint32(cmp.Or(cfg.MaxConcurrentStreams, DefaultMaxConcurrentStreams))),
		grpc.ChainUnaryInterceptor(unary...),
		grpc.ChainStreamInterceptor(stream...),
	)
	if g.inflight != nil {
		opts = append(opts, grpc.InTapHandle(g.inflight.Tap(diagnosticMethod)))
	}
	if creds := g.creds; g.replies != nil {
		// The budget knows each connection through its credentials (nil
		// ones: plaintext), not a stats.Handler, which would cost every
		// call an event per step (replybudget.Credentials).
		opts = append(opts, grpc.Creds(replybudget.Credentials(creds)))
	} else if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	if cfg.TracerProvider != nil { // off, no handler at all: tracing costs nothing
		opts = append(opts, grpc.StatsHandler(tracing.ServerHandler(cfg.TracerProvider)))
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, healthSrv)
	reflection.Register(srv)
	return srv
}

// The access log writes, per method and code of failed calls, this many
// lines at once and then this many a second; the next line after a gap
// counts the lines dropped.
const (
	failedCallLinesBurst     = 10
	failedCallLinesPerSecond = 1
)

func recoverPanic(log *slog.Logger, m *metrics.Metrics) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		m.Panic()
		log.ErrorContext(ctx, "panic in handler", "panic", p, "stack", string(debug.Stack()))
		return rpcerrors.Status(errPanic, "", "").Err()
	}
}

// errPanic is what a caller is told of a panic: rpcerrors.Status turns any
// error it does not know into INTERNAL, without the cause.
var errPanic = errors.New("panic in handler")

// stopGracefully lets in-flight calls finish, then cuts off whatever is
// still running after timeout.
func stopGracefully(srv *grpc.Server, timeout time.Duration, log *slog.Logger) {
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(timeout):
		log.Warn("shutdown timeout passed; cancelling calls still in flight")
		srv.Stop()
		<-done
	}
}
