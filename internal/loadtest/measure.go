package loadtest

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// operation performs operation number i of a scenario for one caller.
type operation func(ctx context.Context, i int64) error

// measure runs op from cfg.Concurrency callers until the count is reached
// or the duration is up, and summarises it. Ops, the rate and the
// latencies are of the operations that succeeded; Errors counts the rest.
// The end of the duration stops callers from starting operations; those in
// flight finish, so that none is cut off and miscounted.
//
// A caller whose operation failed waits before its next one (failureBackoff)
// and the run stops once cfg.MaxConsecutiveErrors operations in a row have
// failed (Measurement.GaveUp): a server that is gone gets a few hundred
// calls, not hundreds of thousands.
func measure(ctx context.Context, cfg Config, label string, op operation) Measurement {
	var (
		next, errs atomic.Int64
		streak     atomic.Int64 // operations failed in a row, all callers
		firstErr   atomic.Value
		lastErr    atomic.Value
		gaveUp     atomic.Bool
		wg         sync.WaitGroup
		hists      = make([]histogram, cfg.Concurrency)
		stop       atomic.Bool
	)
	if cfg.Count <= 0 {
		timer := time.AfterFunc(cfg.Duration, func() { stop.Store(true) })
		defer timer.Stop()
	}
	start := time.Now()
	stopProgress := progress(cfg.Progress, label, start, &next, &errs)
	for c := range cfg.Concurrency {
		wg.Go(func() {
			wait := failureBackoff()
			for !stop.Load() && ctx.Err() == nil {
				i := next.Add(1)
				if cfg.Count > 0 && i > cfg.Count {
					next.Add(-1)
					return
				}
				t0 := time.Now()
				if cfg.Rate > 0 {
					t0 = start.Add(time.Duration(float64(i-1) / cfg.Rate * float64(time.Second)))
					if wait := time.Until(t0); wait > 0 {
						time.Sleep(wait)
					}
				}
				err := op(ctx, i)
				if err != nil && ctx.Err() != nil {
					// The run was cancelled: not the operation's failure.
					next.Add(-1)
					return
				}
				if err == nil {
					streak.Store(0)
					wait.Reset()
					hists[c].record(time.Since(t0))
					continue
				}
				// A failure is not throughput: a server that fails fast
				// would otherwise look fast. It is counted apart, and its
				// latency stays out of the percentiles.
				errs.Add(1)
				firstErr.CompareAndSwap(nil, err.Error())
				lastErr.Store(err.Error())
				if streak.Add(1) >= int64(cfg.MaxConsecutiveErrors) {
					gaveUp.Store(true)
					stop.Store(true)
					return
				}
				sleep(ctx, wait.NextBackOff())
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopProgress()
	var all histogram
	for i := range hists {
		all.merge(&hists[i])
	}
	m := Measurement{Ops: all.n, Errors: errs.Load(), Seconds: elapsed.Seconds(),
		P50: all.quantile(0.5), P90: all.quantile(0.9), P99: all.quantile(0.99),
		Max: time.Duration(all.max) * time.Microsecond}
	if elapsed > 0 {
		m.PerSecond = float64(all.n) / elapsed.Seconds()
	}
	if e, ok := firstErr.Load().(string); ok {
		m.FirstError = e
	}
	if e, ok := lastErr.Load().(string); ok && gaveUp.Load() {
		m.GaveUpAfter, m.LastError = cfg.MaxConsecutiveErrors, e
	}
	return m
}

// progress writes a line per second to w until the returned func is called.
func progress(w io.Writer, label string, start time.Time, ops, errs *atomic.Int64) func() {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	line := func() {
		s := time.Since(start).Seconds()
		n := ops.Load()
		fmt.Fprintf(w, "\r%-24s %6.1fs %10d ops %9.0f/s %6d errors", label, s, n, float64(n)/s, errs.Load())
	}
	go func() {
		defer close(finished)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-done:
				line()
				fmt.Fprintln(w)
				return
			case <-tick.C:
				line()
			}
		}
	}()
	return func() { close(done); <-finished }
}
