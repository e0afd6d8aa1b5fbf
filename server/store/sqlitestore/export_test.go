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
	group := make([]*command, len(cmds))
	for i, cmd := range cmds {
		var consumer, key string
		switch p := cmd.(type) {
		case store.ClaimParams:
			consumer, key = p.Consumer, p.Key
		case store.CompleteParams:
			consumer, key = p.Consumer, p.Key
		case store.RejectParams:
			consumer, key = p.Consumer, p.Key
		case store.ExtendLeaseParams:
			consumer, key = p.Consumer, p.Key
		}
		group[i] = &command{ctx: ctxs[i], consumer: consumer, key: key, cmd: cmd, done: make(chan struct{})}
	}
	s.w.slot <- struct{}{}
	s.w.queueMu.Lock()
	s.w.queue = append(s.w.queue, group...)
	s.w.queueMu.Unlock()
	s.w.runGroup()
	s.w.release()
	ds, errs := make([]store.Decision, len(cmds)), make([]error, len(cmds))
	for i, c := range group {
		<-c.done
		ds[i], errs[i] = c.d, c.err
	}
	return ds, errs
}
