package pgstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"time"

	"github.com/cockroachdb/cockroach-go/v2/crdb"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/puddle/v2"

	"github.com/dedupd/dedupd/server/store"
)

// Retry policy for serialization failures (SQLSTATE 40001, including a
// compare-and-set that lost a race). A hot key makes every writer but one
// retry; the jittered backoff spreads the retries out so that they stop
// colliding.
const (
	maxRetries     = 30
	backoffBase    = time.Millisecond
	backoffCeiling = 40 * time.Millisecond
)

// errConcurrentWrite is a compare-and-set that found the row changed since
// it was read. It carries SQLSTATE 40001 so that the retry loop treats it
// like the database's own serialization failures: the whole attempt, read
// included, runs again.
var errConcurrentWrite error = concurrentWriteError{}

type concurrentWriteError struct{}

func (concurrentWriteError) Error() string {
	return "record changed between read and write"
}

func (concurrentWriteError) SQLState() string { return "40001" }

// withRetry runs attempt until it succeeds, fails with anything but a
// serialization failure, or runs out of retries, and classifies the final
// error. Every statement goes through it: a database whose default
// isolation is SERIALIZABLE (CockroachDB's) can fail single statements with
// 40001 too, and a compare-and-set miss counts as one.
//
// The store runs one multi-statement transaction, park mode's (parked.go).
// It and any other must be retried whole, from BEGIN (crdb.ExecuteCtx
// around pgx.BeginTxFunc, as here), never
// with crdb.ExecuteTx or crdbpgx.ExecuteTx: those commit through RELEASE
// SAVEPOINT and ignore the COMMIT's error, which on PostgreSQL reports
// success for a transaction that was never written.
func (s *Store) withRetry(ctx context.Context, op string, attempt func(context.Context) error) error {
	attempts := 0
	err := crdb.ExecuteCtx(crdb.WithMaxRetries(ctx, maxRetries), func(ctx context.Context, _ ...any) error {
		if attempts > 0 {
			if s.onRetry != nil {
				s.onRetry(op)
			}
			// ExecuteCtx retries at once; without a pause the retries of
			// contended transactions collide again.
			if err := sleep(ctx, backoff(attempts)); err != nil {
				return err
			}
		}
		attempts++
		return attempt(ctx)
	})
	return classify(ctx, op, err)
}

// backoff returns the pause before retry number retry (1-based): exponential,
// capped, with "equal jitter" so that it is never shorter than half its step.
func backoff(retry int) time.Duration {
	step := backoffCeiling
	if retry <= 8 {
		step = min(backoffBase<<(retry-1), backoffCeiling)
	}
	return step/2 + rand.N(step/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// classify turns the error of an operation into one of the errors the Store
// contract allows. The cases, in order:
//
//  1. the contract's refusals (store.Refused: those decided by store.Apply,
//     ErrNotFound, ErrNoPolicy and the stream refusals): returned unchanged;
//  2. the caller's context is done: its error, unchanged;
//  3. the database is unreachable, overloaded, shutting down, stayed too
//     contended to commit, or cannot tell whether the commit happened
//     (SQLSTATE 40003, see sqlStateClass): wrapped in store.ErrUnavailable,
//     whose contract already says the outcome may be unknown;
//  4. anything else is a bug or a schema problem: an internal error.
//
// Every wrapping keeps the cause with %w, so its SQLSTATE is still found with
// errors.As.
func classify(ctx context.Context, op string, err error) error {
	switch {
	case err == nil:
		return nil
	case isRefusal(err):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	case classifySQLState(sqlState(err)) == stateAmbiguous:
		return fmt.Errorf("%w: pgstore: %s: outcome unknown: %w", store.ErrUnavailable, op, err)
	case isUnavailable(err):
		return fmt.Errorf("%w: pgstore: %s: %w", store.ErrUnavailable, op, err)
	default:
		return fmt.Errorf("pgstore: %s: internal error: %w", op, err)
	}
}

// isRefusal: the contract's refusals (store.Refused, the one list) are
// answers, returned unchanged.
func isRefusal(err error) bool {
	_, refused := store.Refused(err)
	return refused
}

func isUnavailable(err error) bool {
	var exhausted *crdb.MaxRetriesExceededError
	var connect *pgconn.ConnectError
	var netErr net.Error
	switch {
	case errors.As(err, &exhausted), errors.As(err, &connect), errors.As(err, &netErr):
		return true
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, puddle.ErrClosedPool):
		// The server closed the connection, or the store is shutting down.
		return true
	}
	// Unavailable and ambiguous SQLSTATEs, and a serialization failure that
	// reached here without the retry loop (the migration runner's).
	return classifySQLState(sqlState(err)) != stateOther
}
