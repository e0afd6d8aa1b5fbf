package sqlitestore

import (
	"time"

	"github.com/dedupd/dedupd/server/store"
)

// Finishing a lease in one statement. A Complete, Reject or ExtendLease
// comes, nearly always, for a lease this writer granted moments before:
// it wrote that row itself and knows every column of it. heldRows keeps
// those rows (pending ones, the only kind a finish writes), and a finish
// of one is decided by store.Apply on the row as written, then written by
// an UPDATE whose WHERE clause pins every column of that row (pinnedSQL).
// The UPDATE changes the row only when the row is, column for column, the
// record Apply decided on, so what it writes and answers is Apply's
// decision on the stored row. Whatever else happened to the row since (a
// rollback of the group that wrote it, an admin delete or purge, the
// reaper, a takeover, a restore), the UPDATE changes nothing and the
// command takes the path that reads: the rows kept need no invalidation to
// be right, only a bound to stay small.
//
// Why not a conditional UPDATE ... RETURNING of the columns the finish
// leaves alone (the plan pgstore uses for streams, without a row in
// memory): it was built, held to Apply by the oracle test, and measured.
// SQLite runs RETURNING through an ephemeral table, and in modernc that
// UPDATE cost about as much CPU as the SELECT and a targeted UPDATE
// together (28 µs against 10 + 9 µs per command in BenchmarkDecide's
// setting) before the cost of planning it ahead of the read.

// maxHeldRows bounds the rows kept, and maxHeldRowBytes the variable part
// of each (key, owner, digest, an earlier result): a row larger than that is
// not kept, and its finish reads. So the rows kept hold at most about
// 4096 × 1.3 KiB, whatever callers send. A store whose claims are not
// finished (abandoned, or finished elsewhere) fills it, and it then starts
// again empty; those finishes take the path that reads.
const (
	maxHeldRows     = 4096
	maxHeldRowBytes = 1 << 10
)

// recordKey names a record.
type recordKey struct{ consumer, key string }

// heldRows are the pending rows this writer wrote last, by key; guarded by
// the writer's slot.
type heldRows map[recordKey]store.Record

// note keeps r when it is a held lease, and forgets its key otherwise.
func (h *heldRows) note(r *store.Record) {
	k := recordKey{r.Consumer, r.Key}
	if r.State != store.Pending || heldRowBytes(r) > maxHeldRowBytes {
		delete(*h, k)
		return
	}
	if *h == nil || len(*h) >= maxHeldRows {
		*h = make(heldRows, 64)
	}
	(*h)[k] = *r
}

// heldRowBytes is the variable part of r, which maxHeldRowBytes bounds.
func heldRowBytes(r *store.Record) int {
	return len(r.Consumer) + len(r.Key) + len(r.Owner) + len(r.Digest) + len(r.Result)
}

// finishHeld decides a command of a lease on the row this writer wrote for
// it and writes the decision if the row is still that one. It reports
// false, having changed nothing, when it has no such row, when Apply
// refuses or writes nothing (answered from the stored row by the path
// that reads), or when the row has changed.
func (w *writer) finishHeld(consumer, key string, cmd store.Command, now time.Time) (store.Decision, bool, error) {
	k := recordKey{consumer, key}
	held, ok := w.held[k]
	if !ok {
		return store.Decision{}, false, nil
	}
	d, applyErr := store.Apply(&held, cmd, now)
	if decided := applyErr == nil && d.Write; !decided {
		return store.Decision{}, false, nil
	}
	n, err := w.updatePinned(&held, &d.Record)
	if err != nil {
		return store.Decision{}, false, err
	}
	if n == 0 {
		delete(w.held, k)
		return store.Decision{}, false, nil
	}
	return d, true, nil
}

// updatePinned writes next over the row if it is, in every column, held.
// It returns the rows changed, 0 or 1.
func (w *writer) updatePinned(held, next *store.Record) (int64, error) {
	pins, set, values := changedColumns(held, next)
	if set == 0 {
		return 0, nil // nothing to write: let the read confirm the row
	}
	stmt, err := w.preparedFor(&w.pinned, set, pinnedSQL)
	if err != nil || stmt == nil {
		return 0, err
	}
	res, err := w.exec(stmt, append(pins, values[2:]...)...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
