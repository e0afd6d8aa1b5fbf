package api

import (
	"context"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/claimwait"
	"github.com/dedupd/dedupd/server/store"
)

// Waiting claims (the wait field of ClaimRequest, ClaimBatchItem and
// ClaimStreamRequest): a claim that finds its key or stream held by
// another caller is claimed again, through the store as any claim is,
// each time server/claimwait wakes it, until it finds something else than
// IN_PROGRESS or its wait (clamped to --max-claim-wait) has passed. Past
// the waiter bounds, or with waiting off, it is answered at once.
//
// A claim whose owner is the holder's own (non-empty) is answered at
// once: it is the holder asking again (a retry of a claim whose reply was
// lost), and waiting would only wait out its own lease.
//
// A waiting call keeps its request, so only a small one waits: past
// maxWaitingRequestBytes (a Claim or ClaimStream; a real one is under
// 1 KiB, but unknown fields could make it as large as the message limit)
// or maxWaitingBatchBytes (a ClaimBatch of 1000 full items is about
// 850 KiB) it is answered at once, and the waiters pin at most
// --max-claim-waiters small requests (docs/operations.md, Memory).
const (
	maxWaitingRequestBytes = 16 << 10
	maxWaitingBatchBytes   = 1 << 20
)

// wait checks a wait field: absent or zero is no wait, negative is
// refused, and any positive one is accepted, to the nanosecond (it is
// never stored), and clamped later: a caller asking for what is left of
// its own budget need not round it.
func (v *validator) wait(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	if err := d.CheckValid(); err != nil {
		v.fail("wait", "is not a valid duration: %v", err)
		return 0
	}
	w := d.AsDuration()
	if w < 0 {
		v.fail("wait", "must not be negative, got %s", w)
	}
	return w
}

// heldByOther reports a claim that found the key held by a caller other
// than owner.
func heldByOther(outcome store.Outcome, holder, owner string) bool {
	return outcome == store.InProgress && (owner == "" || holder != owner)
}

// awaitClaim waits out an IN_PROGRESS answer res to the claim p, for at
// most wait, and returns the answer of the claim that ended the wait.
func (s *DedupService) awaitClaim(ctx context.Context, req proto.Message, p store.ClaimParams, wait time.Duration, res store.ClaimResult) (store.ClaimResult, error) {
	wait = s.waits.Clamp(wait)
	if wait <= 0 || !heldByOther(res.Outcome, res.Record.Owner, p.Owner) || proto.Size(req) > maxWaitingRequestBytes {
		return res, nil
	}
	w := s.waits.Join()
	defer w.Leave()
	if !w.Watch(claimwait.Key{Consumer: p.Consumer, Name: p.Key}) {
		return res, nil
	}
	err := w.Await(ctx, wait, func(ctx context.Context) (claimwait.Busy, error) {
		next, err := s.store.Claim(ctx, p)
		if err != nil {
			return claimwait.Busy{}, err
		}
		res = next
		return claimwait.Busy{Held: heldByOther(next.Outcome, next.Record.Owner, p.Owner), RetryAfter: next.RetryAfter}, nil
	})
	return res, err
}

// awaitStream is awaitClaim for a stream claim.
func (s *StreamService) awaitStream(ctx context.Context, req proto.Message, p store.ClaimStreamParams, wait time.Duration, res store.StreamClaimResult) (store.StreamClaimResult, error) {
	held := func(r store.StreamClaimResult) bool {
		return r.Outcome == store.StreamInProgress && (p.Owner == "" || r.Stream.Owner != p.Owner)
	}
	wait = s.waits.Clamp(wait)
	if wait <= 0 || !held(res) || proto.Size(req) > maxWaitingRequestBytes {
		return res, nil
	}
	w := s.waits.Join()
	defer w.Leave()
	if !w.Watch(claimwait.Key{Consumer: p.Consumer, Name: p.Stream, Stream: true}) {
		return res, nil
	}
	err := w.Await(ctx, wait, func(ctx context.Context) (claimwait.Busy, error) {
		next, err := s.store.ClaimStream(ctx, p)
		if err != nil {
			return claimwait.Busy{}, err
		}
		res = next
		return claimwait.Busy{Held: held(next), RetryAfter: next.RetryAfter}, nil
	})
	return res, err
}

// WaitWith lets the service's stream claims wait on r (nil: never wait).
func (s *StreamService) WaitWith(r *claimwait.Registry) *StreamService {
	s.waits = r
	return s
}

// awaitBatch waits out the IN_PROGRESS items of a claim batch, each for
// at most its own wait, claiming again together those still waiting each
// time one of their keys is woken; the batch answers once none waits. An
// item behind an earlier item of the same batch that acquired its key
// does not wait: its holder is this very caller, who has no answer yet.
func (s *DedupService) awaitBatch(ctx context.Context, req *dedupv1.ClaimBatchRequest, items []batchItem) error {
	consumer, reqs := req.GetConsumer(), req.GetItems()
	if !s.waits.On() || proto.Size(req) > maxWaitingBatchBytes {
		return nil
	}
	acquired := map[string]bool{}
	for _, it := range items {
		if it.cmd != nil && it.res.Err == nil && it.res.Outcome == store.Acquired {
			acquired[it.key] = true
		}
	}
	held := func(i int) bool {
		it := &items[i]
		return it.cmd != nil && it.res.Err == nil && heldByOther(it.res.Outcome, it.res.Record.Owner, reqs[i].GetOwner())
	}
	w := s.waits.Join()
	defer w.Leave()
	waits := make([]time.Duration, len(items))
	var longest time.Duration
	for i := range items {
		d := s.waits.Clamp(reqs[i].GetWait().AsDuration())
		if d <= 0 || !held(i) || acquired[items[i].key] ||
			!w.Watch(claimwait.Key{Consumer: consumer, Name: items[i].key}) {
			continue
		}
		waits[i], longest = d, max(longest, d)
	}
	if longest == 0 {
		return nil
	}
	start := time.Now()
	kept := payloadBudget{kept: heldPayload(items)}
	return w.Await(ctx, longest, func(ctx context.Context) (claimwait.Busy, error) {
		var again []batchItem
		var at []int
		for i := range items {
			if waits[i] > time.Since(start) && held(i) {
				again, at = append(again, batchItem{key: items[i].key, cmd: items[i].cmd}), append(at, i)
			}
		}
		s.apply(ctx, again)
		var busy claimwait.Busy
		for j, i := range at {
			items[i].res, items[i].omitted = again[j].res, again[j].omitted
			kept.keep(&items[i])
			if held(i) {
				ra := items[i].res.RetryAfter
				if !busy.Held || ra < busy.RetryAfter {
					busy.RetryAfter = ra
				}
				busy.Held = true
			}
		}
		return busy, nil
	})
}

// heldPayload is the payload bytes the items' answers keep now, counted
// as payloadBudget counts them.
func heldPayload(items []batchItem) int {
	var b payloadBudget
	for i := range items {
		it := items[i] // a copy: counting must not drop anything
		b.keep(&it)
	}
	return b.kept
}
