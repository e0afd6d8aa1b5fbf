package loadtest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// failureBackoff is how long a caller waits after each failed operation in
// a row: 10ms doubling to at most 1s, each wait jittered by ±50% so that
// the callers do not retry in step. A success resets it.
func failureBackoff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{
		InitialInterval:     10 * time.Millisecond,
		RandomizationFactor: 0.5,
		Multiplier:          2,
		MaxInterval:         time.Second,
	}
}

// sleep waits d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// errGaveUp marks a run stopped for its failures in a row.
var errGaveUp = errors.New("loadtest: stopped")

// gaveUp is the error of a measurement stopped for its failures in a row,
// or nil.
func (m Measurement) gaveUp(scenario, side string) error {
	if m.GaveUpAfter == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s on %s: %d operations in a row failed (is the server up?); the last: %s",
		errGaveUp, scenario, side, m.GaveUpAfter, m.LastError)
}
