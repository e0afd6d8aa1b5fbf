package jobs

import (
	"context"
	"time"
)

// every calls pass every interval until ctx ends, the first time one
// interval from now. A pass that runs long delays the next instead of
// piling them up (time.Ticker drops the ticks missed meanwhile).
func every(ctx context.Context, interval time.Duration, pass func(context.Context)) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if ctx.Err() != nil { // both were ready: stopping wins
			return
		}
		pass(ctx)
	}
}
