package accesslog

import (
	"errors"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/server/rpcerrors"
)

// The levels of docs/operations.md (Logging): the caller's mistakes and the
// routine conflicts at INFO, trouble worth a look at WARN, bugs at ERROR.
// The errors are wire statuses with the code and ErrorInfo reason that
// docs/api.md gives each refusal.
func TestLevelOfFailedCalls(t *testing.T) {
	wire := func(code codes.Code, reason string) error { return rpcerrors.New(code, reason, "x", nil).Err() }
	cases := []struct {
		name string
		err  error
		want slog.Level
	}{
		{"digest mismatch", wire(codes.FailedPrecondition, rpcerrors.ReasonDigestMismatch), slog.LevelInfo},
		{"lease lost", wire(codes.Aborted, rpcerrors.ReasonLeaseLost), slog.LevelInfo},
		{"already finished", wire(codes.FailedPrecondition, rpcerrors.ReasonAlreadyFinished), slog.LevelInfo},
		{"sequence gap", wire(codes.FailedPrecondition, rpcerrors.ReasonSequenceGap), slog.LevelInfo},
		{"stream mode mismatch", wire(codes.FailedPrecondition, rpcerrors.ReasonStreamModeMismatch), slog.LevelInfo},
		{"not found", wire(codes.NotFound, rpcerrors.ReasonNotFound), slog.LevelInfo},
		{"invalid field", wire(codes.InvalidArgument, rpcerrors.ReasonInvalidField), slog.LevelInfo},
		{"store unavailable", wire(codes.Unavailable, rpcerrors.ReasonStoreUnavailable), slog.LevelWarn},
		{"overloaded", wire(codes.ResourceExhausted, rpcerrors.ReasonOverloaded), slog.LevelWarn},
		{"permission denied", wire(codes.PermissionDenied, rpcerrors.ReasonPermissionDenied), slog.LevelWarn},
		// The same codes without a routine reason stay at WARN.
		{"bare failed precondition", status.Error(codes.FailedPrecondition, "x"), slog.LevelWarn},
		{"bare aborted", status.Error(codes.Aborted, "x"), slog.LevelWarn},
		{"internal", wire(codes.Internal, rpcerrors.ReasonInternal), slog.LevelError},
		{"not a status", errors.New("boom"), slog.LevelError},
	}
	for _, tc := range cases {
		if got := Level(tc.err); got != tc.want {
			t.Errorf("%s (%v): level %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
