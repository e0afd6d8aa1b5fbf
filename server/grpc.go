package server

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/logging"
	"github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/recovery"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/dedupd/dedupd/server/api"
)

// messageOverhead is room for everything in a request besides the result.
const messageOverhead = 64 << 10

// maxRecvMsgSize admits the largest result any consumer's policy may allow,
// so that too large a result is refused by validation, naming the field
// and the consumer's limit, not by the transport.
const maxRecvMsgSize = api.MaxResultBytesCeiling + messageOverhead

// newGRPCServer builds the server with its interceptors, outermost first:
// logging sees every call with its final code, recovery turns a panic in a
// handler into INTERNAL and keeps the server up.
func newGRPCServer(cfg Config, log *slog.Logger, healthSrv *health.Server) *grpc.Server {
	logOpts := []logging.Option{
		logging.WithLogOnEvents(logging.FinishCall),
		logging.WithFieldsFromContextAndCallMeta(consumerField),
	}
	recoverOpt := recovery.WithRecoveryHandlerContext(recoverPanic(log))
	srv := grpc.NewServer(
		grpc.MaxRecvMsgSize(maxRecvMsgSize),
		grpc.ChainUnaryInterceptor(
			logging.UnaryServerInterceptor(slogAdapter(log), logOpts...),
			recovery.UnaryServerInterceptor(recoverOpt),
		),
		grpc.ChainStreamInterceptor(
			logging.StreamServerInterceptor(slogAdapter(log), logOpts...),
			recovery.StreamServerInterceptor(recoverOpt),
		),
	)
	healthpb.RegisterHealthServer(srv, healthSrv)
	reflection.Register(srv)
	return srv
}

func slogAdapter(log *slog.Logger) logging.Logger {
	return logging.LoggerFunc(func(ctx context.Context, level logging.Level, msg string, fields ...any) {
		log.Log(ctx, slog.Level(level), msg, fields...)
	})
}

// consumerField adds the consumer to each call's log line; keys, results and
// digests are never logged.
func consumerField(_ context.Context, c interceptors.CallMeta) logging.Fields {
	if r, ok := c.ReqOrNil.(interface{ GetConsumer() string }); ok {
		return logging.Fields{"consumer", r.GetConsumer()}
	}
	return nil
}

func recoverPanic(log *slog.Logger) recovery.RecoveryHandlerFuncContext {
	return func(ctx context.Context, p any) error {
		log.ErrorContext(ctx, "panic in handler", "panic", p, "stack", string(debug.Stack()))
		return api.Status(errPanic, "", "").Err()
	}
}

// errPanic is what a caller is told of a panic: api.Status turns any error
// it does not know into INTERNAL, without the cause.
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
