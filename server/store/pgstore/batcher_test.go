package pgstore

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// heldWriter is a batch writer whose batches stay in flight until the test
// lets them go, one at a time, so a test can arrange who arrives while
// what is being written.
type heldWriter struct {
	sizes   chan int      // each batch's size, as it starts
	release chan struct{} // one receive ends one batch in flight
	written atomic.Int64  // calls that have entered a batch
}

func (w *heldWriter) write(_ context.Context, batch []*call[int, int]) {
	w.written.Add(int64(len(batch)))
	w.sizes <- len(batch)
	<-w.release
	for _, c := range batch {
		c.resp = c.req * 10
	}
}

// arrive makes call req (the req-th call) from a goroutine of its own and
// waits until the batcher has taken it: queued, or in a batch being
// written, whose size the test then reads from sizes.
func arrive(t *testing.T, b *batcher[int, int], w *heldWriter, wg *sync.WaitGroup, req int) {
	t.Helper()
	wg.Go(func() {
		if got, err := b.do(context.Background(), req); err != nil || got != req*10 {
			t.Errorf("call %d: answer %d, %v; want %d", req, got, err, req*10)
		}
	})
	for int64(b.queueLen())+w.written.Load() != int64(req) {
		runtime.Gosched()
	}
}

func (b *batcher[Req, Resp]) queueLen() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

func (b *batcher[Req, Resp]) inFlightNow() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.inFlight
}

// TestBatcherStartsASecondBatchOnlyForHalfABatch pins the shapes group
// commit writes: a lone caller goes at once; callers arriving while a
// batch is in flight queue; half a batch queued goes beside the one in
// flight; a finished batch hands the queue on, at most maxBatch at a time.
func TestBatcherStartsASecondBatchOnlyForHalfABatch(t *testing.T) {
	w := &heldWriter{sizes: make(chan int, 16), release: make(chan struct{})}
	b := newBatcher(8, 2, w.write, func(int) {})
	var wg sync.WaitGroup

	arrive(t, b, w, &wg, 1)
	if got := <-w.sizes; got != 1 {
		t.Fatalf("a lone caller wrote a batch of %d, want 1", got)
	}
	for req := 2; req <= 4; req++ {
		arrive(t, b, w, &wg, req)
	}
	if got := b.inFlightNow(); got != 1 {
		t.Fatalf("3 queued callers (less than half a batch of 8) started a batch: %d in flight, want 1", got)
	}
	arrive(t, b, w, &wg, 5) // the fourth queued: half a batch
	if got := <-w.sizes; got != 4 {
		t.Fatalf("half a batch queued started a batch of %d, want 4", got)
	}
	for req := 6; req < 16; req++ { // both places taken: all ten queue
		arrive(t, b, w, &wg, req)
	}
	if got := b.inFlightNow(); got != 2 {
		t.Fatalf("%d batches in flight, want 2", got)
	}
	w.release <- struct{}{} // the lone call's batch ends, and hands on 8
	if got := <-w.sizes; got != 8 {
		t.Fatalf("the queue of 10 was handed on as a batch of %d, want 8 (maxBatch)", got)
	}
	w.release <- struct{}{} // the batch of 4 ends, and hands on the last 2
	if got := <-w.sizes; got != 2 {
		t.Fatalf("the rest of the queue went as a batch of %d, want 2", got)
	}
	w.release <- struct{}{}
	w.release <- struct{}{}
	wg.Wait()
	if got := b.inFlightNow(); got != 0 {
		t.Fatalf("%d batches in flight after every answer, want 0", got)
	}
}
