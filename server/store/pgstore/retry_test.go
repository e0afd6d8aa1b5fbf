package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/cockroachdb/cockroach-go/v2/crdb"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dedupd/dedupd/server/store"
)

func TestClassify(t *testing.T) {
	pgErr := func(code string) error { return fmt.Errorf("query: %w", &pgconn.PgError{Code: code}) }
	exhausted := crdb.ExecuteCtx(crdb.WithMaxRetries(context.Background(), 0),
		func(context.Context, ...any) error { return pgErr("40001") })
	conflict := &store.ConflictError{Err: store.ErrLeaseLost}

	const (
		unchanged = iota
		unavailable
		internal
	)
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"refusal", conflict, unchanged},
		{"not found", store.ErrNotFound, unchanged},
		{"sequence gap", &store.StreamConflictError{Err: store.ErrSequenceGap, Expected: 2}, unchanged},
		{"bare sequence gap", store.ErrSequenceGap, unchanged},
		{"bare mode mismatch", fmt.Errorf("claim: %w", store.ErrModeMismatch), unchanged},
		{"no policy", store.ErrNoPolicy, unchanged},
		{"connection exception", pgErr("08006"), unavailable},
		{"too many connections", pgErr("53300"), unavailable},
		{"admin shutdown", pgErr("57P01"), unavailable},
		{"cannot connect now", pgErr("57P03"), unavailable},
		{"io error", pgErr("58030"), unavailable},
		{"retries exhausted", exhausted, unavailable},
		{"connection closed", fmt.Errorf("receive: %w", io.ErrUnexpectedEOF), unavailable},
		{"unique violation", pgErr("23505"), internal},
		{"undefined table", pgErr("42P01"), internal},
		{"statement timeout", pgErr("57014"), unavailable},
		{"lock timeout", pgErr("55P03"), unavailable},
		{"check violation", pgErr("23514"), internal},
		{"ambiguous commit", pgErr("40003"), unavailable},
		{"serialization failure outside the retry loop", pgErr("40001"), unavailable},
		{"deadlock", pgErr("40P01"), unavailable},
	} {
		got := classify(context.Background(), "op", tc.err)
		switch {
		case !errors.Is(got, tc.err):
			t.Errorf("%s: %v lost its cause %v", tc.name, got, tc.err)
		case tc.want == unchanged && got != tc.err:
			t.Errorf("%s: %v, want it unchanged", tc.name, got)
		case tc.want == unavailable && !errors.Is(got, store.ErrUnavailable):
			t.Errorf("%s: %v, want ErrUnavailable", tc.name, got)
		case tc.want == internal && (errors.Is(got, store.ErrUnavailable) || got == tc.err):
			t.Errorf("%s: %v, want a wrapped internal error", tc.name, got)
		}
		var pg *pgconn.PgError
		if errors.As(tc.err, &pg) && (!errors.As(got, &pg) || sqlState(got) != pg.Code) {
			t.Errorf("%s: SQLSTATE %s not found in %v", tc.name, pg.Code, got)
		}
	}
}

func TestClassifyReturnsTheContextError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := classify(ctx, "op", &pgconn.PgError{Code: "08006"}); got != context.Canceled {
		t.Errorf("classify with a canceled context = %v, want context.Canceled", got)
	}
	// A refusal was decided before the context ended; it stands.
	if got := classify(ctx, "op", store.ErrLeaseLost); got != store.ErrLeaseLost {
		t.Errorf("classify of a refusal with a canceled context = %v", got)
	}
}

func TestBackoffIsBoundedAndJittered(t *testing.T) {
	for retry := 1; retry <= maxRetries; retry++ {
		step := min(backoffBase<<min(retry-1, 8), backoffCeiling)
		seen := map[time.Duration]bool{}
		for range 50 {
			d := backoff(retry)
			if d < step/2 || d > step {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", retry, d, step/2, step)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("backoff(%d) is not jittered: %v", retry, seen)
		}
	}
}

// The one table of SQLSTATEs: what may run again, what is reported as
// unavailable, and what has an unknown outcome.
func TestClassifySQLState(t *testing.T) {
	for code, want := range map[string]sqlStateClass{
		"40001": stateRetryable, "CR000": stateRetryable,
		"40003": stateAmbiguous,
		"08006": stateUnavailable, "53300": stateUnavailable, "57P01": stateUnavailable,
		"58030": stateUnavailable, "40P01": stateUnavailable, "55P03": stateUnavailable, "57014": stateUnavailable,
		"23505": stateOther, "42P01": stateOther, "40002": stateOther, "": stateOther,
	} {
		if got := classifySQLState(code); got != want {
			t.Errorf("classifySQLState(%q) = %d, want %d", code, got, want)
		}
	}
}

// An ambiguous commit runs once and is reported as an unknown outcome
// (ErrUnavailable); a serialization failure runs again.
func TestWithRetryNeverRetriesAnAmbiguousCommit(t *testing.T) {
	for _, tc := range []struct {
		code         string
		wantAttempts int
	}{
		{"40003", 1},
		{"40001", 3},
	} {
		attempts := 0
		err := (&Store{}).withRetry(context.Background(), "complete", func(context.Context) error {
			attempts++
			if attempts < 3 {
				return &pgconn.PgError{Code: tc.code}
			}
			return nil
		})
		if attempts != tc.wantAttempts {
			t.Errorf("SQLSTATE %s: %d attempts, want %d", tc.code, attempts, tc.wantAttempts)
		}
		if tc.code == "40003" && (!errors.Is(err, store.ErrUnavailable) || sqlState(err) != "40003") {
			t.Errorf("SQLSTATE 40003: %v; want ErrUnavailable carrying the SQLSTATE", err)
		}
	}
}
