package sqlitestore

import "github.com/dedupd/dedupd/server/store/commitmetrics"

// Commit metrics: a transaction that wrote is one commit carrying the
// writes of its group (with group commit, every queued call's), and under
// SyncFull one fsync of the WAL, which SQLite makes at each commit (the
// checkpoints' syncs are not a commit's and are not counted). Writes per
// commit is the group commit at work.

// wrote counts one write of kind k in the open transaction when it wrote.
// The caller holds the slot.
func (w *writer) wrote(wrote bool, k commitmetrics.Kind) {
	if wrote {
		w.group.Add(k, 1)
	}
}

// committed records the transaction that just committed. A retried group
// (runCommands drops a failed command and runs the rest again) counts only
// the attempt that committed: transact resets the group at BEGIN.
func (w *writer) committed() {
	w.commits.CommitGroup(&w.group)
	if w.syncs {
		w.commits.Fsync()
	}
}
