// Package accesslog is dedupd's log of gRPC calls. By default it writes
// what operators act on and nothing else:
//
//   - a call that fails, rate-limited per method and code (loglimit), with
//     the count of lines dropped since the last one of its kind;
//   - a unary call slower than Options.Slow, at WARN, not counting the
//     wait its caller asked for (a claim's wait, spent waiting for another
//     caller's outcome by request, is not slowness). A stream is never
//     slow: it lasts as long as its caller keeps it open (grpcurl's
//     reflection stream) or its work runs (Purge).
//
// A call that succeeds in time costs two clock reads and a comparison: no
// field is built. With Options.All (or a logger enabled at DEBUG), every
// call is logged, unlimited, as before.
//
// A line's fields are those of go-grpc-middleware's logging interceptor,
// which dedupd used before: grpc.service, grpc.method, grpc.method_type,
// grpc.code, grpc.error, grpc.time_ms, grpc.start_time, peer.address and
// the consumer. Every value a caller chose is cut to clip.MaxLogged (the
// consumer is logged before validation, for refused calls too, and a request
// may name one of many megabytes).
// Keys, results, digests and credentials are never logged.
package accesslog

import (
	"context"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/dedupd/dedupd/internal/clip"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/consumer"
	"github.com/dedupd/dedupd/server/loglimit"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// Options say which calls are logged.
type Options struct {
	// All logs every call. A logger enabled at DEBUG implies it.
	All bool
	// Slow logs successful unary calls that took at least this long
	// beyond the wait they asked for, at WARN; zero logs none for being
	// slow.
	Slow time.Duration
	// MaxWait is the longest wait the server grants a claim (longer ones
	// are clamped to it, --max-claim-wait); zero grants none, so no call is
	// allowed any.
	MaxWait time.Duration
	// Failed rate-limits the lines of failed calls; nil logs them all.
	Failed *loglimit.Limiter
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Log decides which calls to log and writes their lines.
type Log struct {
	log  *slog.Logger
	opts Options
}

// New returns the access log writing to log.
func New(log *slog.Logger, opts Options) *Log {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	opts.All = opts.All || log.Enabled(context.Background(), slog.LevelDebug)
	return &Log{log: log, opts: opts}
}

// UnaryServerInterceptor logs unary calls. It must run after the consumer
// interceptor, which puts the consumer in the context.
func (l *Log) UnaryServerInterceptor() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		start := l.opts.Now()
		resp, err := handler(ctx, req)
		l.finished(ctx, info.FullMethod, "unary", start, l.waitAllowed(req), err)
		return resp, err
	}
}

// StreamServerInterceptor logs streams when they end.
func (l *Log) StreamServerInterceptor() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		start := l.opts.Now()
		err := handler(srv, ss)
		kind := "bidi_stream"
		switch {
		case info.IsClientStream && !info.IsServerStream:
			kind = "client_stream"
		case info.IsServerStream && !info.IsClientStream:
			kind = "server_stream"
		}
		l.finished(ss.Context(), info.FullMethod, kind, start, neverSlow, err)
		return err
	}
}

// neverSlow is the allowance of a stream: no length makes it slow.
const neverSlow = time.Duration(math.MaxInt64)

// waitAllowed is how long req asked to wait for another caller's outcome
// (the longest of a batch's items), as the server grants it (MaxWait).
func (l *Log) waitAllowed(req any) time.Duration {
	var wait time.Duration
	switch r := req.(type) {
	case interface{ GetWait() *durationpb.Duration }:
		wait = r.GetWait().AsDuration()
	case *dedupv1.ClaimBatchRequest:
		for _, it := range r.GetItems() {
			wait = max(wait, it.GetWait().AsDuration())
		}
	}
	return max(min(wait, l.opts.MaxWait), 0)
}

// finished writes the line of a call that ended, if it is one to log; a
// successful one is slow when it took Slow beyond allowed.
func (l *Log) finished(ctx context.Context, method, kind string, start time.Time, allowed time.Duration, err error) {
	took := l.opts.Now().Sub(start)
	slow := l.opts.Slow > 0 && took-l.opts.Slow >= allowed
	if err == nil && !slow && !l.opts.All {
		return // the common case: nothing built, nothing written
	}
	code := status.Code(err)
	level := Level(err)
	msg := "finished call"
	var dropped int64
	switch {
	case l.opts.All:
	case err != nil:
		if !l.log.Enabled(ctx, level) {
			return
		}
		if l.opts.Failed != nil {
			var ok bool
			if ok, dropped = l.opts.Failed.Allow(loglimit.Key{What: method, Code: code}); !ok {
				return
			}
		}
	default: // slow
		level, msg = slog.LevelWarn, "slow call"
	}
	if !l.log.Enabled(ctx, level) {
		return
	}
	l.log.LogAttrs(ctx, level, msg, l.fields(ctx, method, kind, start, took, code, err, dropped)...)
}

func (l *Log) fields(ctx context.Context, method, kind string, start time.Time, took time.Duration,
	code codes.Code, err error, dropped int64) []slog.Attr {
	attrs := make([]slog.Attr, 0, 13)
	if name, named := consumer.FromContext(ctx); named {
		attrs = append(attrs, slog.String("consumer", clip.String(name, clip.MaxLogged)))
	}
	service, name := splitMethod(method)
	attrs = append(attrs, slog.String("protocol", "grpc"), slog.String("grpc.component", "server"),
		slog.String("grpc.service", service), slog.String("grpc.method", name), slog.String("grpc.method_type", kind))
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		attrs = append(attrs, slog.String("peer.address", p.Addr.String()))
	}
	attrs = append(attrs, slog.String("grpc.start_time", start.Format(time.RFC3339)))
	if d, ok := ctx.Deadline(); ok {
		attrs = append(attrs, slog.String("grpc.request.deadline", d.Format(time.RFC3339)))
	}
	attrs = append(attrs, slog.String("grpc.code", code.String()))
	if err != nil {
		attrs = append(attrs, slog.String("grpc.error", clip.String(err.Error(), clip.MaxLogged)))
	}
	attrs = append(attrs, slog.String("grpc.time_ms", strconv.FormatFloat(float64(took.Microseconds())/1000, 'f', -1, 32)))
	if dropped > 0 {
		attrs = append(attrs, slog.Int64("dropped", dropped))
	}
	return attrs
}

// Level is the level of a failed call's line: the caller's mistakes and
// the routine conflicts of deduplication (routineConflicts) at INFO,
// trouble worth a look at WARN, bugs at ERROR. It is the one decision of a
// failure's level; every path that logs a failed call asks it.
func Level(err error) slog.Level {
	st := status.Convert(err)
	if routineConflicts[rpcerrors.Info(st).GetReason()] {
		return slog.LevelInfo
	}
	switch st.Code() {
	case codes.OK, codes.NotFound, codes.Canceled, codes.AlreadyExists, codes.InvalidArgument, codes.Unauthenticated:
		return slog.LevelInfo
	case codes.DeadlineExceeded, codes.PermissionDenied, codes.ResourceExhausted, codes.FailedPrecondition,
		codes.Aborted, codes.OutOfRange, codes.Unavailable:
		return slog.LevelWarn
	}
	return slog.LevelError
}

// routineConflicts are the refusals that deduplication gives in its normal
// course (a redelivery with another payload, a lease taken over, a message
// out of order): the system working as designed, logged at INFO though
// their codes (FAILED_PRECONDITION, ABORTED) are otherwise worth a WARN.
// Their rates are in the metrics (dedupd_digest_conflicts_total,
// dedupd_leases_lost_total, dedupd_stream_refusals_total).
var routineConflicts = map[string]bool{
	rpcerrors.ReasonDigestMismatch:     true,
	rpcerrors.ReasonLeaseLost:          true,
	rpcerrors.ReasonAlreadyFinished:    true,
	rpcerrors.ReasonSequenceGap:        true,
	rpcerrors.ReasonStreamModeMismatch: true,
}

// splitMethod splits "/package.Service/Method".
func splitMethod(full string) (service, method string) {
	full = strings.TrimPrefix(full, "/")
	if i := strings.LastIndexByte(full, '/'); i >= 0 {
		return full[:i], full[i+1:]
	}
	return "unknown", full
}
