package sqlitestore

import (
	"context"

	"github.com/dedupd/dedupd/migrations"
	"github.com/dedupd/dedupd/server/store"
)

// AppliedMigrations exposes, to the external tests, the migrations that
// Open ran.
func AppliedMigrations(s *Store) []migrations.Migration { return s.applied }

// WriterSynchronous reads SQLite's synchronous setting on the write
// connection (0 OFF, 1 NORMAL, 2 FULL); callers must not write meanwhile.
func WriterSynchronous(s *Store) (int, error) {
	var v int
	err := s.w.conn.QueryRowContext(context.Background(), "PRAGMA synchronous").Scan(&v)
	return v, err
}

// ApplyGroup runs commands as one group commit, deterministically: queued
// as if their callers arrived together, then run by one holder of the
// write connection. Requires group commit on and len(cmds) <= MaxBatch.
func ApplyGroup(s *Store, ctxs []context.Context, cmds []store.Command) ([]store.Decision, []error) {
	writes, group := make([]keyWrite, len(cmds)), make([]queued, len(cmds))
	for i, cmd := range cmds {
		consumer, key := store.KeyOf(cmd)
		writes[i] = keyWrite{queueEntry: queueEntry{ctx: ctxs[i], consumer: consumer, done: make(chan struct{})}, key: key, cmd: cmd}
		group[i] = &writes[i]
	}
	s.w.slot <- struct{}{}
	s.w.queueMu.Lock()
	s.w.queue = append(s.w.queue, group...)
	s.w.queueMu.Unlock()
	s.w.runGroup()
	s.w.release()
	ds, errs := make([]store.Decision, len(cmds)), make([]error, len(cmds))
	for i := range writes {
		<-writes[i].done
		ds[i], errs[i] = writes[i].d, writes[i].err
	}
	return ds, errs
}
