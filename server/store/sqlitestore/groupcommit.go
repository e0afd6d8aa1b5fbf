package sqlitestore

import (
	"context"
	"errors"

	"github.com/dedupd/dedupd/server/store"
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

// command is one caller's write, queued for the write connection.
type command struct {
	ctx           context.Context
	consumer, key string
	cmd           store.Command
	// Set by whoever runs the command, before done is closed.
	d    store.Decision
	err  error
	done chan struct{}
}

// applyGrouped queues a command and waits until some caller holding the
// write connection, possibly this one, has run it. A caller whose context
// ends while its command is still queued withdraws it and gets the
// context's error, nothing written; once the command is running it is no
// longer withdrawn, as in acquire.
func (w *writer) applyGrouped(ctx context.Context, c command) (store.Decision, error) {
	c.ctx, c.done = ctx, make(chan struct{})
	w.queueMu.Lock()
	w.queue = append(w.queue, &c)
	w.queueMu.Unlock()
	for {
		select {
		case <-c.done:
			return c.d, c.err
		default:
		}
		select {
		case <-c.done:
			return c.d, c.err
		case w.slot <- struct{}{}:
			w.runGroup()
			w.release()
		case <-ctx.Done():
			if w.withdraw(&c) {
				return store.Decision{}, ctx.Err()
			}
			<-c.done
			return c.d, c.err
		}
	}
}

// withdraw removes a command that no one has started, and reports whether
// it did.
func (w *writer) withdraw(c *command) bool {
	w.queueMu.Lock()
	defer w.queueMu.Unlock()
	for i, q := range w.queue {
		if q == c {
			w.queue = append(w.queue[:i], w.queue[i+1:]...)
			return true
		}
	}
	return false
}

// runGroup takes the queued commands and runs them in one transaction,
// answering each. The caller holds the slot.
func (w *writer) runGroup() {
	w.queueMu.Lock()
	n := min(len(w.queue), w.maxBatch)
	group := append([]*command(nil), w.queue[:n]...)
	w.queue = append(w.queue[:0:0], w.queue[n:]...)
	w.queueMu.Unlock()
	defer func() {
		for _, c := range group {
			close(c.done)
		}
	}()
	// As in acquire: a caller who gave up before its command started gets
	// the context's error, and nothing of its is written.
	live := group[:0:0]
	for _, c := range group {
		switch {
		case w.closed:
			c.err = errClosed
		case c.ctx.Err() != nil:
			c.err = c.ctx.Err()
		default:
			live = append(live, c)
		}
	}
	_, span := storetrace.StartBatch(context.Background(), "sqlitestore.write_batch", len(live),
		func(i int) (context.Context, string) { return live[i].ctx, live[i].consumer })
	w.runCommands(live)
	storetrace.EndBatch(span, len(live), func(i int) error { return live[i].err })
}

// runCommands runs commands in one transaction. A command whose read or
// write fails with a database error gets that error, and the transaction
// is rolled back and run again without it, so that its failure cannot
// reach the others and no partial work of the failed attempt survives
// (after some errors SQLite has already rolled the whole transaction back,
// and later statements would run outside it). Each retry drops one
// command, so this ends.
func (w *writer) runCommands(group []*command) {
	for len(group) > 0 {
		failed := -1
		err := w.transact(func() (bool, error) {
			write := false
			for i, c := range group {
				c.d, c.err = w.decide(c.consumer, c.key, c.cmd)
				if c.err != nil && !isRefusal(c.err) {
					failed = i
					return false, c.err
				}
				write = write || c.d.Write
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
				c.d, c.err = store.Decision{}, err
			}
		}
		return
	}
}

// isRefusal reports the errors store.Apply decides; anything else from
// decide is the database failing.
func isRefusal(err error) bool {
	var conflict *store.ConflictError
	return errors.As(err, &conflict) || errors.Is(err, store.ErrLeaseLost)
}
