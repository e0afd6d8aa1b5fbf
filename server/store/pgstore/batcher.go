package pgstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// batcher groups concurrent calls of one kind so that a single statement
// serves them all (see groupcommit.go for why and when).
//
// It has no goroutine of its own. A caller arriving while nothing is being
// written writes its call at once, as a batch of one; otherwise it queues.
// A leader that has written its batch takes the queue as the next batch
// and makes that batch's first caller its leader, whose goroutine has to
// wake up for its answer anyway. So the queue is never left without a
// leader coming, nothing waits for a timer, and a batch is whatever
// queued while the one before it was being written.
//
// A queue of half a batch (startAt) does not wait for the batch in
// flight: it goes at once, beside it, up to maxInFlight batches. Under
// load the writes are then a pipeline of full batches. A second batch
// started for every caller who found a place free made half the commits
// batches of one (measured: 54% of claim-new's commits at 32 callers),
// each costing PostgreSQL a whole commit.
type batcher[Req, Resp any] struct {
	maxBatch    int
	maxInFlight int
	// write answers every call of a batch of live calls, setting resp or
	// err on each; ctx is bounded by the callers' deadlines.
	write func(ctx context.Context, batch []*call[Req, Resp])
	// committed is told how many calls each written batch answered
	// without error: the commands its commit carried (for metrics).
	committed func(n int)

	mu       sync.Mutex
	queue    []*call[Req, Resp] // guarded by mu; non-empty only when inFlight > 0
	inFlight int                // guarded by mu
	closed   bool               // guarded by mu
	leaders  sync.WaitGroup
}

// call is one caller's request in a batcher.
type call[Req, Resp any] struct {
	ctx  context.Context
	req  Req
	resp Resp
	err  error
	// lead is set, under batcher.mu, when this caller is made the leader
	// of a batch that was queued: it writes lead, itself included.
	lead []*call[Req, Resp]
	// wake is closed when the call is answered or its caller made leader.
	wake chan struct{}
}

func newBatcher[Req, Resp any](maxBatch, maxInFlight int, write func(context.Context, []*call[Req, Resp]), committed func(n int)) *batcher[Req, Resp] {
	return &batcher[Req, Resp]{maxBatch: maxBatch, maxInFlight: maxInFlight, write: write, committed: committed}
}

// close waits for the batches in flight, and those queued behind them, to
// be answered. Calls that arrive afterwards get errClosed.
func (b *batcher[Req, Resp]) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.leaders.Wait()
}

// do makes a call, in a batch with others when a batch is already being
// written, and returns its answer. A caller whose context ends while its
// call is queued withdraws it and gets the context's error, nothing
// written. Once its call is in a statement the caller still gets the
// context's error at once, and the write may have landed: the same window
// as a single statement cancelled mid-flight (see store.Store).
func (b *batcher[Req, Resp]) do(ctx context.Context, req Req) (Resp, error) {
	c := &call[Req, Resp]{ctx: ctx, req: req, wake: make(chan struct{})}
	b.mu.Lock()
	switch {
	case b.closed:
		b.mu.Unlock()
		return c.resp, errClosed
	case b.inFlight == 0:
		b.inFlight++
		b.leaders.Add(1)
		b.mu.Unlock()
		b.lead(c, []*call[Req, Resp]{c})
		return c.resp, c.err
	}
	b.queue = append(b.queue, c)
	if b.inFlight < b.maxInFlight && len(b.queue) >= b.startAt() {
		// Half a batch waits: it goes now, beside the one in flight.
		b.inFlight++
		b.leaders.Add(1)
		b.handOver()
	}
	b.mu.Unlock()
	select {
	case <-c.wake:
	case <-ctx.Done():
		if !b.mustLead(c) {
			var zero Resp
			return zero, ctx.Err()
		}
	}
	if c.lead != nil {
		b.lead(c, c.lead)
	}
	return c.resp, c.err
}

// mustLead is called by a caller who is giving up. It withdraws the call
// if it is still queued and reports false; or reports whether the caller
// has been made a leader, whom the batch then waits for.
func (b *batcher[Req, Resp]) mustLead(c *call[Req, Resp]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.queue, c); i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
		return false
	}
	return c.lead != nil
}

// lead writes batch, led by leader, then hands the queue to its next
// leader, or, when nothing is queued, gives its place in flight up.
func (b *batcher[Req, Resp]) lead(leader *call[Req, Resp], batch []*call[Req, Resp]) {
	b.writeBatch(batch, leader)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.inFlight--
		b.leaders.Done()
		return
	}
	b.handOver()
}

// handOver makes the first queued call the leader of the queue's first
// maxBatch calls. b.mu must be held and the queue non-empty.
func (b *batcher[Req, Resp]) handOver() {
	n := min(len(b.queue), b.maxBatch)
	next := slices.Clone(b.queue[:n])
	b.queue = slices.Delete(b.queue, 0, n)
	next[0].lead = next
	close(next[0].wake)
}

// startAt is how many queued calls start a batch beside one in flight.
func (b *batcher[Req, Resp]) startAt() int { return max(b.maxBatch/2, 1) }

// writeBatch writes the live calls of batch and answers every call but the
// leader's, which its caller reads on return. Calls whose callers have
// given up are answered with their context's error and left out: they
// were told so, and nothing of theirs may be written. A leader who gave up
// is still a leader; only its call is left out.
func (b *batcher[Req, Resp]) writeBatch(batch []*call[Req, Resp], leader *call[Req, Resp]) {
	live := make([]*call[Req, Resp], 0, len(batch))
	for _, c := range batch {
		if c.err = c.ctx.Err(); c.err == nil {
			live = append(live, c)
		}
	}
	if len(live) > 0 {
		ctx, cancel := batchContext(live)
		b.write(ctx, live)
		cancel()
		answered := 0
		for _, c := range live {
			ownContextError(c)
			if c.err == nil {
				answered++
			}
		}
		b.committed(answered)
	}
	for _, c := range batch {
		if c != leader {
			close(c.wake)
		}
	}
}

// batchContext bounds a batch by the latest deadline among its callers, or
// by none when any caller has none, and ends it once every caller has
// given up: nobody then wants the answer, and a caller alone would have
// stopped waiting for the database. It is not cancelled with any one
// caller while others still want their answer.
func batchContext[Req, Resp any](batch []*call[Req, Resp]) (context.Context, context.CancelFunc) {
	latest, bounded := time.Time{}, true
	for _, c := range batch {
		d, ok := c.ctx.Deadline()
		bounded = bounded && ok
		if ok && d.After(latest) {
			latest = d
		}
	}
	// One context either way: a cancel context made and then replaced
	// would be an allocation per batch for nothing.
	var (
		ctx    context.Context
		cancel context.CancelFunc
	)
	if bounded {
		ctx, cancel = context.WithDeadline(context.Background(), latest)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	var waiting atomic.Int64
	waiting.Store(int64(len(batch)))
	stops := make([]func() bool, len(batch))
	for i, c := range batch {
		stops[i] = context.AfterFunc(c.ctx, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// ownContextError gives a caller whose context has ended, and whose call
// failed on the batch's context, its own context's error, as it would have
// got alone: the batch's may be a cancellation where the caller's is a
// deadline, or the other way round.
func ownContextError[Req, Resp any](c *call[Req, Resp]) {
	if err := c.ctx.Err(); err != nil &&
		(errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) {
		c.err = err
	}
}
