package accesslog

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// The levels of docs/operations.md (Logging): the caller's mistakes and the
// routine conflicts at INFO, trouble worth a look at WARN, bugs at ERROR.
// The errors are the ones handlers return, mapped by rpcerrors as on the
// wire, so the reason a level depends on is the one callers see.
func TestLevelOfFailedCalls(t *testing.T) {
	wire := func(err error) error { return rpcerrors.Status(err, "c", "k").Err() }
	cases := []struct {
		name string
		err  error
		want slog.Level
	}{
		{"digest mismatch", wire(store.ErrDigestMismatch), slog.LevelInfo},
		{"lease lost", wire(store.ErrLeaseLost), slog.LevelInfo},
		{"already finished", wire(store.ErrAlreadyFinished), slog.LevelInfo},
		{"sequence gap", wire(store.ErrSequenceGap), slog.LevelInfo},
		{"stream mode mismatch", wire(store.ErrModeMismatch), slog.LevelInfo},
		{"not found", wire(store.ErrNotFound), slog.LevelInfo},
		{"wrapped conflict", wire(fmt.Errorf("claim: %w", store.ErrDigestMismatch)), slog.LevelInfo},
		{"store unavailable", wire(store.ErrUnavailable), slog.LevelWarn},
		{"overloaded", wire(rpcerrors.ErrOverloaded), slog.LevelWarn},
		{"permission denied", wire(rpcerrors.ErrPermissionDenied), slog.LevelWarn},
		// The same codes without a routine reason stay at WARN.
		{"bare failed precondition", status.Error(codes.FailedPrecondition, "x"), slog.LevelWarn},
		{"bare aborted", status.Error(codes.Aborted, "x"), slog.LevelWarn},
		{"internal", wire(errors.New("boom")), slog.LevelError},
		{"not a status", errors.New("boom"), slog.LevelError},
	}
	for _, tc := range cases {
		if got := Level(tc.err); got != tc.want {
			t.Errorf("%s (%v): level %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
