package receipts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dedupd/dedupd/client"
)

// ErrStale: a live receipt for the key already exists, so the effect
// already happened under another holder. The transaction that tried to
// write this one must roll back, taking its effect with it.
var ErrStale = errors.New("receipts: a live receipt exists: the effect already happened under another holder")

// DefaultMaxAttempts bounds Run's attempts at a transaction that keeps
// failing with a serialization failure.
const DefaultMaxAttempts = 5

// Receipts writes and reads one consumer's receipts in one database.
type Receipts struct {
	// DB runs the transactions of Run, Settle and Prune.
	DB DB
	// Dialect is the database's SQL flavour.
	Dialect Dialect
	// Table is the receipt table; DefaultTable when empty.
	Table string
	// Consumer is the dedupd consumer the receipts belong to.
	Consumer string
	// TTL is how long a receipt lives: the consumer's retention of
	// completed records (see TTLFromPolicy). Required.
	TTL time.Duration
	// MaxAttempts bounds Run's attempts on 40001; DefaultMaxAttempts
	// when zero.
	MaxAttempts int
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

func (r *Receipts) table() string {
	if r.Table == "" {
		return DefaultTable
	}
	return r.Table
}

func (r *Receipts) statements() (statements, error) {
	if err := checkTable(r.table()); err != nil {
		return statements{}, err
	}
	if r.TTL <= 0 {
		return statements{}, fmt.Errorf("receipts: TTL must be positive (the consumer's completed retention), got %v", r.TTL)
	}
	return statementsFor(r.Dialect, r.table()), nil
}

func (r *Receipts) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// timeArg is t as the dialect stores it.
func (r *Receipts) timeArg(t time.Time) any {
	if r.Dialect == SQLite {
		return t.UnixMicro()
	}
	return t.UTC()
}

// Migrate runs migration version 1 on db for the dialect, idempotently:
// the receipt table (DefaultTable when table is empty), then the table
// recording the version, each statement in its own transaction.
func Migrate(ctx context.Context, db DB, d Dialect, table string) error {
	if table == "" {
		table = DefaultTable
	}
	if err := checkTable(table); err != nil {
		return err
	}
	for _, stmt := range migration(d, table) {
		if err := db.InTx(ctx, func(ctx context.Context, tx Tx) error {
			_, err := tx.Exec(ctx, stmt)
			return err
		}); err != nil {
			return fmt.Errorf("receipts: migrate: %w", err)
		}
	}
	return nil
}

// Write records, inside the caller's transaction tx, that the effect of
// key happened under token with result. ErrStale means a live receipt
// exists: the caller must roll tx back.
func (r *Receipts) Write(ctx context.Context, tx Tx, key string, token int64, result []byte) error {
	s, err := r.statements()
	if err != nil {
		return err
	}
	if token <= 0 {
		return fmt.Errorf("receipts: fencing token must be positive, got %d", token)
	}
	if result == nil {
		result = []byte{} // the column is NOT NULL; an empty result is a result
	}
	now := r.now()
	var written int64
	found, err := tx.QueryRow(ctx, s.write,
		[]any{r.Consumer, key, token, result, r.timeArg(now), r.timeArg(now.Add(r.TTL))}, &written)
	switch {
	case err != nil:
		return fmt.Errorf("receipts: write: %w", err)
	case !found:
		return ErrStale
	}
	return nil
}

// Effect is the effect of one key: it changes the caller's database in tx
// and returns the result to store.
type Effect func(ctx context.Context, tx Tx) (result []byte, err error)

// Run runs effect and the receipt of (key, token) in one transaction. It
// retries the whole transaction on a serialization failure, at most
// MaxAttempts times; ErrStale (or any error of effect) rolls it back. An
// outcome nobody can know (40003, a failed COMMIT) is returned marked with
// client.Unknown, so that Do leaves the claim PENDING.
func (r *Receipts) Run(ctx context.Context, key string, token int64, effect Effect) ([]byte, error) {
	attempts := r.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	var err error
	for range attempts {
		var result []byte
		err = r.DB.InTx(ctx, func(ctx context.Context, tx Tx) error {
			var err error
			if result, err = effect(ctx, tx); err != nil {
				return err
			}
			return r.Write(ctx, tx, key, token, result)
		})
		switch {
		case err == nil:
			return result, nil
		case ambiguous(err):
			return nil, client.Unknown(err)
		case !retryable(err) || ctx.Err() != nil:
			return nil, err
		}
	}
	return nil, fmt.Errorf("receipts: gave up after %d serialization failures: %w", attempts, err)
}

// Effect adapts effect to client.Do's fn: it runs under the attempt's key
// and fencing token through Run.
func (r *Receipts) Effect(effect Effect) func(ctx context.Context, a client.Attempt) ([]byte, error) {
	return func(ctx context.Context, a client.Attempt) ([]byte, error) {
		return r.Run(ctx, a.Record.GetKey(), a.FencingToken, effect)
	}
}

// Settle is a client.SettleFunc: the effect of a's key happened when a
// live receipt exists, and its result is the receipt's. A database error
// leaves the outcome unknown (the claim stays PENDING).
func (r *Receipts) Settle(ctx context.Context, a client.Attempt) (result []byte, found bool, err error) {
	found, _, result, err = r.Lookup(ctx, a.Record.GetKey())
	return result, found, err
}

// Lookup reads key's live receipt: found, its fencing token and result.
func (r *Receipts) Lookup(ctx context.Context, key string) (found bool, token int64, result []byte, err error) {
	s, err := r.statements()
	if err != nil {
		return false, 0, nil, err
	}
	err = r.DB.InTx(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		found, err = tx.QueryRow(ctx, s.settle, []any{r.Consumer, key, r.timeArg(r.now())}, &token, &result)
		return err
	})
	if err != nil {
		return false, 0, nil, fmt.Errorf("receipts: settle: %w", err)
	}
	return found, token, result, nil
}

// Prune deletes the receipts expired by now, of every consumer in the
// table, batch rows per transaction (at most), until none is left, and
// returns how many it deleted.
func (r *Receipts) Prune(ctx context.Context, batch int) (deleted int64, err error) {
	s, err := r.statements()
	if err != nil {
		return 0, err
	}
	if batch <= 0 {
		return 0, fmt.Errorf("receipts: prune batch must be positive, got %d", batch)
	}
	now := r.timeArg(r.now())
	for {
		var n int64
		err := r.DB.InTx(ctx, func(ctx context.Context, tx Tx) error {
			var err error
			n, err = tx.Exec(ctx, s.prune, now, batch)
			return err
		})
		if err != nil {
			return deleted, fmt.Errorf("receipts: prune: %w", err)
		}
		deleted += n
		if n < int64(batch) {
			return deleted, nil
		}
	}
}
