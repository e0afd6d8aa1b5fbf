// Package replybudget bounds the bytes of replies that the server has
// built or encoded and its transport has not yet written to the network:
// one server-wide budget, whatever the mix of calls.
//
// grpc-go keeps an encoded reply until the client's flow-control window
// lets it out, long after the handler has returned, so counting calls in
// flight bounds none of it. A call reserves, before its handler runs, what
// its method's reply may take (Plan), and its reply counts from the moment
// it is built: one larger than its reservation is added at once and, if
// there is then no room, waits briefly, counted, and fails
// RESOURCE_EXHAUSTED (OVERLOADED). The
// bytes go back when the transport lets go of the encoded buffer: written
// out, dropped with a reset stream, or dropped with a closed connection
// (grpc-go frees the buffer in the first two cases; the third is seen as
// the connection's end, see StatsHandler).
package replybudget

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dedupd/dedupd/server/rpcerrors"
)

// MaxWait is how long a reply waits for room in the budget before it fails:
// replies to callers that read drain within milliseconds, and a caller that
// never reads does not make others wait longer than this.
const MaxWait = 500 * time.Millisecond

// minCharge is what the smallest reply takes: the buffer grpc-go's pool
// hands out for it (mem's pooling threshold), and which stays with the
// reply until it is written.
const minCharge = 1 << 10

// ConnectionShare is the fraction of the budget that the replies of one
// connection may hold (1/ConnectionShare): a caller that never reads fills
// its own share, not the server's, and the callers that read keep getting
// answers. A connection may always hold one reply, however large. A
// connection whose caller reads may pass its share while the budget is at
// most half full: a client multiplexes all its callers over one
// connection, and 32 callers' batch polls reserve 4 MiB each before they
// run (at a share of 16 MiB, four of them ran at once and the rest were
// refused after MaxWait).
const ConnectionShare = 16

// readingWindow is how recently a connection must have had a reply written
// out to count as one whose caller reads.
const readingWindow = time.Second

// Budget is a bound on reply bytes in flight.
type Budget struct {
	limit, perConn int64

	mu   sync.Mutex
	used int64
	// changed is made by a call that waits for room, and closed and
	// dropped when bytes come back: a reply given back with no one waiting,
	// nearly every one, makes no channel.
	changed chan struct{}
}

// New returns a budget of limit bytes. A reply larger than limit is let
// through only while nothing else is in flight, so that any reply the
// server may send can be read by a caller that reads.
func New(limit int64) *Budget {
	return &Budget{limit: limit, perConn: limit / ConnectionShare}
}

// InUse is how many bytes replies hold now.
func (b *Budget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// take reserves n bytes for a reply on conn (nil: a connection not
// known), waiting at most MaxWait (and never past ctx) for room.
func (b *Budget) take(ctx context.Context, n int64, conn *connReplies) (*reservation, error) {
	r := &reservation{budget: b, conn: conn}
	if err := b.grow(ctx, r, n); err != nil {
		return nil, err
	}
	return r, nil
}

// grow adds n bytes to r, waiting as take does.
func (b *Budget) grow(ctx context.Context, r *reservation, n int64) error {
	added := b.await(ctx, func() bool {
		if !b.fits(n, r) {
			return false
		}
		b.add(r, n)
		return true
	})
	if !added {
		return b.refusal(r.n + n)
	}
	return nil
}

// hold adds n bytes to r at once, over the budget if need be, then waits
// as grow does until r would have fitted: a reply already built counts
// while it waits for room, so that the calls arriving meanwhile find the
// budget full and are refused before they build theirs. On a timeout the
// caller releases r, and the reply with it.
func (b *Budget) hold(ctx context.Context, r *reservation, n int64) error {
	b.force(r, n)
	if !b.await(ctx, func() bool { return b.within(r) }) {
		return b.refusal(r.n)
	}
	return nil
}

// await calls ready, with b.mu held, until it reports true, whenever bytes
// come back; it gives up, reporting false, after MaxWait or when ctx ends.
func (b *Budget) await(ctx context.Context, ready func() bool) bool {
	var timer <-chan time.Time
	for {
		b.mu.Lock()
		ok := ready()
		if !ok && b.changed == nil {
			b.changed = make(chan struct{})
		}
		changed := b.changed
		b.mu.Unlock()
		if ok {
			return true
		}
		if timer == nil {
			t := time.NewTimer(MaxWait)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-changed:
		case <-timer:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// within reports whether r, already counted, fits the budget and its
// connection's share, as fits does for bytes not yet added; b.mu is held.
func (b *Budget) within(r *reservation) bool {
	if c := r.conn; c != nil && c.held > r.n && c.held > b.perConn && !b.mayPassShare(c, 0) {
		return false
	}
	return b.used == r.n || b.used <= b.limit
}

// tryGrow adds n bytes to r if they fit now, without waiting.
func (b *Budget) tryGrow(r *reservation, n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.fits(n, r) {
		return false
	}
	b.add(r, n)
	return true
}

// force adds n bytes to r without waiting, over the budget if need be: the
// reply of a call that may already have written (see Plan).
func (b *Budget) force(r *reservation, n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.add(r, n)
}

// add counts n more bytes for r; b.mu is held.
func (b *Budget) add(r *reservation, n int64) {
	b.used += n
	r.n += n
	if r.conn != nil {
		r.conn.held += n
	}
}

// fits reports whether n more bytes for r fit the budget and r's
// connection's share of it, which they always do when r's reply is the
// only one held (there, or in the whole budget); b.mu is held.
func (b *Budget) fits(n int64, r *reservation) bool {
	if c := r.conn; c != nil && c.held > r.n && c.held+n > b.perConn && !b.mayPassShare(c, n) {
		return false
	}
	return b.used == r.n || b.used+n <= b.limit
}

// mayPassShare reports whether c may hold more than its share, n more
// bytes included: only a connection whose caller reads (a reply of it was
// written out within readingWindow), and only while the budget stays at
// most half full. A caller that never reads keeps to its share; b.mu is
// held.
func (b *Budget) mayPassShare(c *connReplies, n int64) bool {
	return time.Since(c.lastWritten) < readingWindow && b.used+n <= b.limit/2
}

// shrink gives back n of r's bytes.
func (b *Budget) shrink(r *reservation, n int64) {
	b.mu.Lock()
	r.n -= n
	b.mu.Unlock()
	b.give(n, r.conn, false)
}

func (b *Budget) refusal(n int64) error {
	return fmt.Errorf("%w: a reply of %d bytes does not fit beside the replies not yet read by their callers (--max-reply-bytes-in-flight %d, at most %d on one connection)",
		rpcerrors.ErrOverloaded, n, b.limit, b.perConn)
}

// give takes n bytes back for conn; written says they were a reply the
// transport wrote out, which marks conn as one whose caller reads.
func (b *Budget) give(n int64, conn *connReplies, written bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if conn != nil {
		conn.held -= n
		if written {
			conn.lastWritten = time.Now()
		}
	}
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// reservation is one reply's share of a budget, given back once.
type reservation struct {
	budget *Budget
	n      int64 // Budget.mu guards it
	once   sync.Once
	conn   *connReplies // the connection whose end gives it back, if known
	key    any          // the reply, while it waits in pending to be encoded
	size   int          // the reply's encoded size, as the interceptor measured it
}

// release gives r's bytes back, once, whatever became of its reply.
func (r *reservation) release() { r.finish(false) }

// releaseWritten releases r once the transport has written its reply out.
func (r *reservation) releaseWritten() { r.finish(true) }

// finish gives r's bytes back once; written marks its connection as one
// whose caller reads (mayPassShare).
func (r *reservation) finish(written bool) {
	r.once.Do(func() {
		r.budget.mu.Lock()
		n := r.n
		r.budget.mu.Unlock()
		r.budget.give(n, r.conn, written)
		if r.key != nil { // never encoded: its call ended first
			pending.CompareAndDelete(r.key, r)
		}
		if r.conn != nil {
			r.conn.forget(r)
		}
	})
}
