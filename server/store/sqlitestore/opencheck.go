package sqlitestore

import (
	"context"
	"fmt"
	"strings"
)

// checkWAL confirms the journal mode: SQLite silently keeps the old mode
// where WAL is impossible (some network file systems), and the store's
// concurrency design depends on readers running beside the writer.
func (w *writer) checkWAL(ctx context.Context) error {
	var mode string
	if err := w.conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return err
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("journal mode is %q, not WAL", mode)
	}
	return nil
}

// checkWritable writes a row in a transaction and rolls it back. SQLite
// opens a database file it may not write (its permissions, a read-only
// mount, an immutable file) read-only without a word, and then fails every
// write: a server on it would report SERVING and answer reads, and refuse
// every claim. BEGIN IMMEDIATE alone does not notice (in WAL mode its lock
// lives in the -shm file), so the check changes a page: the version table
// has a row once the migrations have run.
func (w *writer) checkWritable(ctx context.Context) error {
	if _, err := w.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	_, err := w.conn.ExecContext(ctx, "UPDATE dedup_schema_migrations SET name = name")
	if _, rbErr := w.conn.ExecContext(ctx, "ROLLBACK"); err == nil {
		err = rbErr
	}
	return err
}
