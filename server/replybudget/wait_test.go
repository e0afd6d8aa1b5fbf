package replybudget

import (
	"context"
	"runtime"
	"testing"
)

// TestWaiterGetsRoomWhenBytesComeBack: a reply that finds the budget full
// waits, and takes its bytes when another reply's come back, instead of
// being refused once MaxWait has passed. A waiter is woken by the return
// of bytes alone; without it, each attempt here is refused. An attempt on
// a machine so loaded that MaxWait passes between the wait and the return
// is refused too, so the test asks for one success in three.
func TestWaiterGetsRoomWhenBytesComeBack(t *testing.T) {
	ctx := context.Background()
	var errs []error
	for range 3 {
		b := New(1000)
		full, err := b.take(ctx, 1000, nil)
		if err != nil {
			t.Fatalf("taking the whole budget: %v", err)
		}
		got := make(chan error, 1)
		go func() {
			r, err := b.take(ctx, 600, nil)
			if err == nil {
				r.release()
			}
			got <- err
		}()
		for !b.hasWaiter() {
			runtime.Gosched()
		}
		full.release()
		err = <-got
		if err == nil {
			return
		}
		errs = append(errs, err)
	}
	t.Fatalf("a waiting reply was refused after the budget's bytes came back, three times: %v", errs)
}

// hasWaiter reports whether a call waits for room.
func (b *Budget) hasWaiter() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed != nil
}
