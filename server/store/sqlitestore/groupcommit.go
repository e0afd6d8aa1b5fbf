package sqlitestore

import (
	"context"
	"slices"

	"github.com/dedupd/dedupd/server/store"
	"github.com/dedupd/dedupd/server/store/commitmetrics"
	"github.com/dedupd/dedupd/server/store/storetrace"
)

// Group commit: with synchronous=FULL every commit is an fsync, and the
// fsync, not SQLite, bounds the write rate. Commands that queue while a
// transaction commits are therefore run together in the next one, each
// still read, decided by store.Apply and written on its own, in queue
// order, so each sees the writes of those before it exactly as if they
// had committed one by one. One fsync then acknowledges the whole group.
//
// There is no timer: the caller that gets the write connection takes every
// command queued at that moment (up to maxBatch) and runs them; at low load
// that is its own command alone, so nobody waits for a group to fill.

// DefaultMaxBatch is the most commands per transaction when
// Options.MaxBatch is zero.
const DefaultMaxBatch = 64

// queued is one caller's write waiting for the write connection: a
// keyWrite or a streamWrite, each with its own command and decision. The
// queue itself needs only their queueEntry.
type queued interface {
	entry() *queueEntry
	// run decides the write inside the open transaction, setting its
	// answer, and reports whether it wrote anything.
	run(w *writer) (wrote bool)
	// fail answers the write with err, and no decision.
	fail(err error)
	// kind is the write's kind in the commit metrics.
	kind() commitmetrics.Kind
}

// queueEntry is what the queue keeps of every write, whatever its kind.
type queueEntry struct {
	ctx      context.Context
	consumer string
	// call is the entry of the first write of the call this one belongs
	// to: a lone call's own, or a batch's first. A group takes whole calls.
	call *queueEntry
	// Set by whoever runs the write, before done is closed.
	err  error
	done chan struct{}
}

func (e *queueEntry) entry() *queueEntry { return e }

// keyWrite is a write of one key's record.
type keyWrite struct {
	queueEntry
	key string
	cmd store.Command
	d   store.Decision
}

func (k *keyWrite) run(w *writer) bool {
	k.d, k.err = w.decide(k.consumer, k.key, k.cmd)
	return k.d.Write
}

func (k *keyWrite) fail(err error) { k.d, k.err = store.Decision{}, err }

func (k *keyWrite) kind() commitmetrics.Kind { return commitmetrics.KindOf(k.cmd.Op()) }

// streamWrite is a write of one stream's row.
type streamWrite struct {
	queueEntry
	stream string
	cmd    store.StreamCommand
	d      store.StreamDecision
}

func (s *streamWrite) run(w *writer) bool {
	s.d, s.err = w.decideStream(s.consumer, s.stream, s.cmd)
	return s.d.Write
}

func (s *streamWrite) fail(err error) { s.d, s.err = store.StreamDecision{}, err }

func (s *streamWrite) kind() commitmetrics.Kind { return commitmetrics.KindStream }

// applyGrouped queues a key's write and waits until some caller holding
// the write connection, possibly this one, has run it.
func (w *writer) applyGrouped(ctx context.Context, consumer, key string, cmd store.Command) (store.Decision, error) {
	k := &keyWrite{queueEntry: queueEntry{consumer: consumer}, key: key, cmd: cmd}
	w.runQueued(ctx, []queued{k})
	return k.d, k.err
}

// runQueued queues the commands of one call (a batch's, in batch order)
// and waits until some callers holding the write connection, possibly this
// one, have run them all. A caller whose context ends while commands of
// its call are still queued withdraws them, and they get the context's
// error, nothing written; once a command is running it is no longer
// withdrawn, as in acquire.
func (w *writer) runQueued(ctx context.Context, cs []queued) {
	first := cs[0].entry()
	for _, c := range cs {
		e := c.entry()
		e.ctx, e.call, e.done = ctx, first, make(chan struct{}) //nolint:fatcontext // the caller's context, stored, not nested
	}
	last := cs[len(cs)-1].entry()
	w.queueMu.Lock()
	w.queue = append(w.queue, cs...)
	w.queueMu.Unlock()
	for {
		select {
		case <-last.done:
			return
		default:
		}
		select {
		case <-last.done:
			return
		case w.slot <- struct{}{}:
			w.runGroup()
			w.release()
		case <-ctx.Done():
			w.withdraw(cs, ctx.Err())
			for _, c := range cs {
				<-c.entry().done
			}
			return
		}
	}
}

// withdraw removes the commands of cs that no one has started, answering
// them with err.
func (w *writer) withdraw(cs []queued, err error) {
	w.queueMu.Lock()
	defer w.queueMu.Unlock()
	for _, c := range cs {
		if i := slices.Index(w.queue, c); i >= 0 {
			w.queue = slices.Delete(w.queue, i, i+1)
			c.fail(err)
			close(c.entry().done)
		}
	}
}

// runGroup takes the queued commands and runs them in one transaction,
// answering each. The caller holds the slot.
func (w *writer) runGroup() {
	w.queueMu.Lock()
	// Up to maxBatch calls, each whole: a batch's commands share one
	// transaction (one fsync) with the calls queued beside it.
	n, calls := 0, 0
	for ; n < len(w.queue); n++ {
		if e := w.queue[n].entry(); e.call == e {
			if calls == w.maxBatch {
				break
			}
			calls++
		}
	}
	group := append([]queued(nil), w.queue[:n]...)
	w.queue = append(w.queue[:0:0], w.queue[n:]...)
	w.queueMu.Unlock()
	defer func() {
		for _, c := range group {
			close(c.entry().done)
		}
	}()
	// As in acquire: a caller who gave up before its command started gets
	// the context's error, and nothing of its is written.
	live := group[:0:0]
	for _, c := range group {
		switch ctx := c.entry().ctx; {
		case w.closed:
			c.fail(errClosed)
		case ctx.Err() != nil:
			c.fail(ctx.Err())
		default:
			live = append(live, c)
		}
	}
	_, span := storetrace.StartBatch(context.Background(), "sqlitestore.write_batch", len(live),
		func(i int) (context.Context, string) { e := live[i].entry(); return e.ctx, e.consumer })
	w.runCommands(live)
	storetrace.EndBatch(span, len(live), func(i int) error { return live[i].entry().err })
}

// runCommands runs commands in one transaction. A command whose read or
// write fails with a database error gets that error, and the transaction
// is rolled back and run again without it, so that its failure cannot
// reach the others and no partial work of the failed attempt survives
// (after some errors SQLite has already rolled the whole transaction back,
// and later statements would run outside it). Each retry drops one
// command, so this ends.
func (w *writer) runCommands(group []queued) {
	for len(group) > 0 {
		failed := -1
		err := w.transact(func() (bool, error) {
			write := false
			for i, c := range group {
				wrote := c.run(w)
				if err := c.entry().err; err != nil && !isRefusal(err) {
					failed = i
					return false, err
				}
				write = write || wrote
				w.wrote(wrote, c.kind())
			}
			return write, nil
		})
		if failed >= 0 {
			group = append(group[:failed:failed], group[failed+1:]...)
			continue
		}
		if err != nil {
			// BEGIN or COMMIT failed: nothing of the group was written, and
			// answers read from its uncommitted writes must not be given.
			for _, c := range group {
				c.fail(err)
			}
		}
		return
	}
}

// isRefusal reports the errors store.Apply and store.ApplyStream decide
// (store.Refused, the contract's one list): answers that write nothing, so
// the rest of the group goes on. Anything else from decide is the database
// failing.
func isRefusal(err error) bool {
	_, refused := store.Refused(err)
	return refused
}
