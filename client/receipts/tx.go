package receipts

import (
	"context"
	"database/sql"
	"errors"

	"github.com/jackc/pgx/v5"
)

// Tx is the caller's open transaction, as the receipt needs it: one
// implementation of the receipt serves database/sql and pgx.
type Tx interface {
	// Exec runs a statement that returns no rows and says how many rows
	// it changed.
	Exec(ctx context.Context, query string, args ...any) (rows int64, err error)
	// QueryRow runs query and scans its first row into dest; found is
	// false when there is no row.
	QueryRow(ctx context.Context, query string, args []any, dest ...any) (found bool, err error)
}

// DB begins transactions: the helpers that run their own (Migrate, Run,
// Settle, Prune) take one.
type DB interface {
	// InTx runs fn in a new transaction, committing when fn returns nil
	// and rolling back otherwise. A COMMIT that fails is returned wrapped
	// in *CommitError.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
}

// CommitError is a COMMIT that failed: unless it is a serialization
// failure, the transaction may or may not have committed.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return "receipts: commit: " + e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// SQLTx adapts a database/sql transaction.
func SQLTx(tx *sql.Tx) Tx { return sqlTx{tx} }

type sqlTx struct{ tx *sql.Tx }

func (t sqlTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqlTx) QueryRow(ctx context.Context, query string, args []any, dest ...any) (bool, error) {
	err := t.tx.QueryRowContext(ctx, query, args...).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// SQLDB adapts a database/sql pool; opts (nil for the driver's default)
// sets each transaction's isolation level.
func SQLDB(db *sql.DB, opts *sql.TxOptions) DB { return sqlDB{db, opts} }

type sqlDB struct {
	db   *sql.DB
	opts *sql.TxOptions
}

func (d sqlDB) InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	tx, err := d.db.BeginTx(ctx, d.opts)
	if err != nil {
		return err
	}
	defer rollbackOnPanic(func() { _ = tx.Rollback() })
	if err := fn(ctx, sqlTx{tx}); err != nil {
		return errors.Join(err, ignoreDone(tx.Rollback()))
	}
	if err := tx.Commit(); err != nil {
		return &CommitError{err}
	}
	return nil
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// PgxTx adapts a pgx transaction.
func PgxTx(tx pgx.Tx) Tx { return pgxTx{tx} }

type pgxTx struct{ tx pgx.Tx }

func (t pgxTx) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := t.tx.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (t pgxTx) QueryRow(ctx context.Context, query string, args []any, dest ...any) (bool, error) {
	err := t.tx.QueryRow(ctx, query, args...).Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// PgxBeginner is what PgxDB begins transactions on: a *pgxpool.Pool or a
// *pgx.Conn.
type PgxBeginner interface {
	BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error)
}

// PgxDB adapts a pgx pool or connection; opts sets each transaction's
// isolation level (the zero value is the server's default).
func PgxDB(db PgxBeginner, opts pgx.TxOptions) DB { return pgxDB{db, opts} }

type pgxDB struct {
	db   PgxBeginner
	opts pgx.TxOptions
}

func (d pgxDB) InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error {
	tx, err := d.db.BeginTx(ctx, d.opts)
	if err != nil {
		return err
	}
	defer rollbackOnPanic(func() { _ = tx.Rollback(context.WithoutCancel(ctx)) })
	if err := fn(ctx, pgxTx{tx}); err != nil {
		// The context may be done; the rollback must still be sent.
		rbErr := tx.Rollback(context.WithoutCancel(ctx))
		if errors.Is(rbErr, pgx.ErrTxClosed) {
			rbErr = nil
		}
		return errors.Join(err, rbErr)
	}
	if err := tx.Commit(ctx); err != nil {
		return &CommitError{err}
	}
	return nil
}

// sqlState is the SQLSTATE of err, or "": pgconn.PgError and most drivers'
// errors have a SQLState method.
func sqlState(err error) string {
	var coded interface{ SQLState() string }
	if errors.As(err, &coded) {
		return coded.SQLState()
	}
	return ""
}

// retryable: a serialization failure (40001, or CockroachDB's legacy
// CR000) rolled the whole transaction back; running it again is safe.
func retryable(err error) bool {
	s := sqlState(err)
	return s == "40001" || s == "CR000"
}

// ambiguous: the transaction may have committed or not. 40003 is
// CockroachDB's "result is ambiguous"; a COMMIT that failed for any reason
// but a serialization failure (a broken connection) is the same.
func ambiguous(err error) bool {
	if sqlState(err) == "40003" {
		return true
	}
	var commit *CommitError
	return errors.As(err, &commit) && !retryable(err)
}

// rollbackOnPanic rolls the transaction back when fn panicked, so that its
// connection and locks are freed, and panics on.
func rollbackOnPanic(rollback func()) {
	if p := recover(); p != nil {
		rollback()
		panic(p)
	}
}
