package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// BatchItem is one message of a poll, for DoBatch.
type BatchItem struct {
	Key    string
	Digest []byte
}

// BatchOutcome is one item's outcome in DoBatch: what Do would have
// returned for it.
type BatchOutcome struct {
	DoResult
	Err error
}

// DoBatchOptions tune DoBatch. The zero value is usable.
type DoBatchOptions struct {
	// LeaseTTL, Owner and ExtendFraction are as in DoOptions.
	LeaseTTL       time.Duration
	Owner          string
	ExtendFraction float64
	// Parallelism bounds the fn calls running at once: 8 when zero.
	Parallelism int
	// Settle is as in DoOptions: it runs for each acquired item whose
	// Attempt.Number is above 1, before fn, within the same parallelism.
	Settle SettleFunc
}

const defaultParallelism = 8

// DoBatch is Do for a whole poll, in three calls to dedupd however many
// items there are, besides heartbeats:
//
//   - one ClaimBatch claims every key; stored outcomes come back replayed
//     (a *RejectedError for a stored rejection) without running fn, and a
//     key that another caller holds gets an *InProgressError at once (DoBatch
//     does not wait: the message is redelivered later);
//   - Settle (when an earlier holder may have done the effect) and fn run
//     for the acquired keys, at most Parallelism at once, while one
//     ExtendLeaseBatch at a time extends all the leases still running; an
//     item whose lease is lost has its context cancelled (cause
//     ErrLeaseLost);
//   - one FinishBatch records every outcome, as Do records one: Complete for
//     a result (fn's or Settle's), Reject for a Terminal error, nothing for
//     an unknown outcome (an *UnknownOutcomeError; the claim stays
//     PENDING), a release for any other error.
//
// Each item's error is typed as Do's would be. A key named twice runs once;
// the later occurrence gets the first's outcome. The returned error
// concerns the whole call (the ClaimBatch failed); outcomes are then nil.
func (c *Client) DoBatch(ctx context.Context, consumer string, items []BatchItem, opt DoBatchOptions,
	fn func(ctx context.Context, key string, a Attempt) ([]byte, error)) ([]BatchOutcome, error) {
	owner := uniqueOwner(opt.Owner)
	first := map[string]int{}
	var claims []ClaimItem
	for _, it := range items {
		if _, dup := first[it.Key]; !dup {
			first[it.Key] = len(claims)
			claims = append(claims, ClaimItem{Key: it.Key, Digest: it.Digest,
				ClaimOptions: ClaimOptions{LeaseTTL: opt.LeaseTTL, Owner: owner}})
		}
	}
	start := time.Now()
	claimed, err := c.ClaimBatch(ctx, consumer, claims)
	if err != nil {
		return nil, err
	}
	outcomes := make([]BatchOutcome, len(claims))
	var run []*batchRun
	for i, r := range claimed {
		switch {
		case r.Err != nil:
			outcomes[i].Err = r.Err
		case r.Outcome == Completed:
			outcomes[i].DoResult = DoResult{Result: r.Record.GetResult(), Record: r.Record, Replayed: true}
		case r.Outcome == Rejected:
			outcomes[i] = BatchOutcome{DoResult{Record: r.Record}, &RejectedError{
				Rejection: rejectionFromProto(r.Record.GetRejection()), Record: r.Record, Replayed: true}}
		case r.Outcome == InProgress && r.Record.GetOwner() != owner:
			outcomes[i].Err = &InProgressError{Record: r.Record, Claims: 1}
		default: // acquired, or our own claim whose first reply was lost
			run = append(run, &batchRun{index: i, key: claims[i].Key, token: r.Record.GetFencingToken(),
				attempt: Attempt{FencingToken: r.Record.GetFencingToken(), Number: r.Record.GetAttempts(), Record: r.Record}})
		}
	}
	if len(run) > 0 {
		c.runBatch(ctx, consumer, run, opt, start, fn)
		c.finishBatch(ctx, consumer, run, outcomes)
	}
	all := make([]BatchOutcome, len(items))
	for i, it := range items {
		all[i] = outcomes[first[it.Key]]
	}
	return all, nil
}

// batchRun is one acquired item of a DoBatch.
type batchRun struct {
	index   int
	key     string
	token   int64
	attempt Attempt
	ctx     context.Context
	cancel  context.CancelCauseFunc
	step    attemptStep
}

// runBatch runs fn for every acquired item, at most opt.Parallelism at
// once, with their leases kept alive by one heartbeat.
func (c *Client) runBatch(ctx context.Context, consumer string, run []*batchRun, opt DoBatchOptions, claimedAt time.Time,
	fn func(ctx context.Context, key string, a Attempt) ([]byte, error)) {
	for _, r := range run {
		r.ctx, r.cancel = context.WithCancelCause(ctx) //nolint:fatcontext // each item's own child of ctx, not a chain
	}
	hb := newHeartbeat(c, consumer, run, opt, claimedAt)
	defer hb.stop()
	parallel := opt.Parallelism
	if parallel <= 0 {
		parallel = defaultParallelism
	}
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, r := range run {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			r.step = runAttempt(r.ctx, r.attempt, retaken(opt.Settle, r.attempt), func(ctx context.Context, a Attempt) ([]byte, error) {
				return fn(ctx, r.key, a)
			})
			hb.finished(r)
		})
	}
	wg.Wait()
}

// finishBatch records every run item's outcome in one FinishBatch; items
// whose outcome is unknown are left out, so their claims stay PENDING.
func (c *Client) finishBatch(ctx context.Context, consumer string, run []*batchRun, outcomes []BatchOutcome) {
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), outcomeTimeout)
	defer cancel()
	var items []FinishItem
	var recorded []*batchRun
	rejections := map[*batchRun]*Rejection{}
	for _, r := range run {
		rec := recordingOf(r.ctx, r.step)
		if rec.pending {
			outcomes[r.index].Err = unknownOutcome(r.step, leaseLoss(r.ctx), r.attempt.Record)
			continue
		}
		rejections[r] = rec.rejection
		recorded = append(recorded, r)
		items = append(items, FinishItem{Key: r.key, FencingToken: r.token, Result: r.step.result, Rejection: rec.rejection})
	}
	for _, r := range run {
		r.cancel(nil)
	}
	if len(items) == 0 {
		return
	}
	finished, err := c.FinishBatch(octx, consumer, items)
	for i, r := range recorded {
		rec, itemErr := (*Record)(nil), err
		if err == nil {
			rec, itemErr = finished[i].Record, finished[i].Err
		}
		res, resErr := outcome(rec, itemErr, rejections[r], r.step)
		outcomes[r.index] = BatchOutcome{res, resErr}
	}
}

// heartbeat extends the leases of a DoBatch's running items, all in one
// ExtendLeaseBatch each time.
type heartbeat struct {
	mu      sync.Mutex
	running []*batchRun
	quit    chan struct{}
	done    chan struct{}
}

func newHeartbeat(c *Client, consumer string, run []*batchRun, opt DoBatchOptions, claimedAt time.Time) *heartbeat {
	hb := &heartbeat{running: append([]*batchRun(nil), run...), quit: make(chan struct{}), done: make(chan struct{})}
	ttl := leaseSpan(run[0].attempt.Record)
	for _, r := range run[1:] {
		ttl = min(ttl, leaseSpan(r.attempt.Record))
	}
	fraction := opt.ExtendFraction
	if fraction <= 0 || fraction >= 1 {
		fraction = 1.0 / 3
	}
	every := max(time.Duration(float64(ttl)*fraction), time.Millisecond)
	leaseEnd := claimedAt.Add(ttl)
	go func() {
		defer close(hb.done)
		next := every
		for {
			select {
			case <-hb.quit:
				return
			case <-time.After(next):
			}
			sent := time.Now()
			if hb.extend(c, consumer, opt.LeaseTTL, leaseEnd) {
				leaseEnd, next = sent.Add(ttl), every
				continue
			}
			if !time.Now().Before(leaseEnd) {
				hb.cancelAll(fmt.Errorf("%w: the leases ran out while they could not be extended", ErrLeaseLost))
				return
			}
			next = max(min(every/4, time.Until(leaseEnd)/2), time.Millisecond)
		}
	}()
	return hb
}

// extend sends one ExtendLeaseBatch for the items still running, cancels
// those whose lease the server says is gone, and reports whether the call
// went through.
func (hb *heartbeat) extend(c *Client, consumer string, ttl time.Duration, leaseEnd time.Time) bool {
	hb.mu.Lock()
	running := append([]*batchRun(nil), hb.running...)
	hb.mu.Unlock()
	if len(running) == 0 {
		return true
	}
	items := make([]ExtendItem, len(running))
	for i, r := range running {
		items[i] = ExtendItem{Key: r.key, FencingToken: r.token, LeaseTTL: ttl}
	}
	ctx, cancel := context.WithDeadline(context.Background(), leaseEnd)
	defer cancel()
	results, err := c.ExtendLeaseBatch(ctx, consumer, items)
	if err != nil {
		return false
	}
	for i, res := range results {
		if e := res.Err; errors.Is(e, ErrLeaseLost) || errors.Is(e, ErrAlreadyFinished) || errors.Is(e, ErrNotFound) {
			running[i].cancel(fmt.Errorf("%w: %w", ErrLeaseLost, e))
			hb.finished(running[i])
		}
	}
	return true
}

// finished takes an item out of the heartbeat.
func (hb *heartbeat) finished(r *batchRun) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for i, x := range hb.running {
		if x == r {
			hb.running = append(hb.running[:i], hb.running[i+1:]...)
			return
		}
	}
}

func (hb *heartbeat) cancelAll(cause error) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	for _, r := range hb.running {
		r.cancel(cause)
	}
}

func (hb *heartbeat) stop() {
	close(hb.quit)
	<-hb.done
}
