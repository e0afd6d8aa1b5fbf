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
