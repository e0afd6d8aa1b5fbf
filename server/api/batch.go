package api

import (
	"context"
	"fmt"
	"time"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/policy"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

// Batch calls: ClaimBatch, FinishBatch, ExtendLeaseBatch and LookupBatch.
//
// The whole call is refused only for what concerns it whole: the consumer,
// authorization (an interceptor, on the request's consumer), the number of
// items, the message size (the transport). Everything else is per item:
// each item is validated, rate limited and stored on its own, and answers
// exactly what its lone call would, errors included, as a google.rpc.Status.

const (
	// DefaultMaxBatchItems is the most items in one batch call when
	// Limits.MaxBatchItems is zero.
	DefaultMaxBatchItems = 1000
	// MaxBatchItemsCeiling is the most --max-batch-items may allow: a reply
	// of that many items, every stored result left out, still fits in
	// MaxReplyBytes (see reply.go).
	MaxBatchItemsCeiling = 1000
)

// ItemLimiter takes rate-limit tokens for the items of a batch.
type ItemLimiter interface {
	// TakeUpTo takes up to n tokens from the consumer's bucket and returns
	// how many it took, and, when fewer than n, how long until the rest
	// could be taken.
	TakeUpTo(consumer string, n int) (taken int, retryAfter time.Duration)
}

// batchItem is one item of a batch on its way through the handler: the
// command to store, or the answer already decided (an invalid or rate
// limited item), then the store's answer.
type batchItem struct {
	key string
	cmd store.Command
	res store.ItemResult
	// omitted says res's payload was dropped as it arrived (see keep).
	omitted bool
}

// batchPolicy checks what concerns a batch whole and loads its policy.
func (s *DedupService) batchPolicy(ctx context.Context, consumer string, items int) (policy.Effective, error) {
	var v validator
	v.consumer(consumer)
	if limit := s.maxBatchItems(); items > limit {
		v.fail("items", "has %d items, more than the limit of %d", items, limit)
	}
	return s.policy(ctx, &v, consumer, func(*validator, policy.Effective) {})
}

func (s *DedupService) maxBatchItems() int {
	if n := s.policies.Defaults().Limits.MaxBatchItems; n > 0 {
		return n
	}
	return DefaultMaxBatchItems
}

// prepare validates each item with check, which returns the item's command
// or leaves a problem in its validator, and takes a rate-limit token per
// item: items past the tokens available are RATE_LIMITED, with the delay
// after which they could be taken. An item with a string that was not
// UTF-8 on the wire (decodeItems) fails with INVALID_FIELD naming it.
func (s *DedupService) prepare(ctx context.Context, consumer string, keys []string, check func(i int, v *validator) store.Command) []batchItem {
	items := make([]batchItem, len(keys))
	taken, after := len(keys), time.Duration(0)
	if s.items != nil && len(keys) > 0 {
		taken, after = s.items.TakeUpTo(consumer, len(keys))
	}
	for i, key := range keys {
		items[i].key = key
		if i >= taken {
			items[i].res.Err = &rpcerrors.RetryAfterError{After: after,
				Err: fmt.Errorf("consumer %q is over its rate; item %d is past the tokens left: %w", consumer, i, rpcerrors.ErrRateLimited)}
			continue
		}
		if field, bad := itemFault(ctx, i); bad {
			items[i].res.Err = &rpcerrors.FieldError{Field: field, Problem: notUTF8}
			continue
		}
		v := validator{prefix: fmt.Sprintf("items[%d].", i)}
		cmd := check(i, &v)
		if err := v.result(); err != nil {
			items[i].res.Err = err
			continue
		}
		items[i].cmd = cmd
	}
	return items
}

// writeBatch refuses a write batch whole or loads its policy, then
// validates each item with check (which returns the item's command, or
// leaves a problem in its validator) and stores the valid ones in one
// batch. The error is the whole call's, ready to return.
func (s *DedupService) writeBatch(ctx context.Context, consumer string, keys []string,
	check func(i int, v *validator, policy policy.Effective) store.Command) ([]batchItem, error) {
	policy, err := s.batchPolicy(ctx, consumer, len(keys))
	if err != nil {
		return nil, s.fail(ctx, err, consumer, "")
	}
	items := s.prepare(ctx, consumer, keys, func(i int, v *validator) store.Command { return check(i, v, policy) })
	s.apply(ctx, items)
	return items, nil
}

// keysOf lists the keys of a batch's items.
func keysOf[T interface{ GetKey() string }](items []T) []string {
	keys := make([]string, len(items))
	for i, it := range items {
		keys[i] = it.GetKey()
	}
	return keys
}

// apply stores the commands of the items that have one, in one batch.
func (s *DedupService) apply(ctx context.Context, items []batchItem) {
	var idx []int
	for i, it := range items {
		if it.cmd != nil {
			idx = append(idx, i)
		}
	}
	var kept payloadBudget
	for start := 0; start < len(idx); start += storeChunk {
		part := idx[start:min(start+storeChunk, len(idx))]
		cmds := make([]store.Command, len(part))
		for j, i := range part {
			cmds[j] = items[i].cmd
		}
		for j, r := range s.store.ApplyBatch(ctx, store.BatchParams{Commands: cmds}) {
			items[part[j]].res = r
			kept.keep(&items[part[j]])
		}
	}
}

func (s *DedupService) ClaimBatch(ctx context.Context, req *dedupv1.ClaimBatchRequest) (*dedupv1.ClaimBatchResponse, error) {
	consumer, reqs := req.GetConsumer(), req.GetItems()
	items, err := s.writeBatch(ctx, consumer, keysOf(reqs), func(i int, v *validator, policy policy.Effective) store.Command {
		it := reqs[i]
		v.key(it.GetKey())
		v.bytes("digest", it.GetDigest(), MaxDigestBytes)
		lease := v.leaseTTL(it.GetLeaseTtl(), MaxTTLCeiling)
		v.text("owner", it.GetOwner(), MaxOwnerBytes)
		v.wait(it.GetWait())
		v.digestRequired(it.GetDigest(), policy)
		v.leaseWithin(lease, policy)
		return store.ClaimParams{Consumer: consumer, Key: it.GetKey(), Digest: it.GetDigest(),
			LeaseTTL: lease, Owner: it.GetOwner(), Policy: policy.Store}
	})
	if err != nil {
		return nil, err
	}
	if err := s.awaitBatch(ctx, req, items); err != nil {
		return nil, s.fail(ctx, err, consumer, "")
	}
	return &dedupv1.ClaimBatchResponse{Results: s.claimResults(ctx, consumer, items)}, nil
}

func (s *DedupService) FinishBatch(ctx context.Context, req *dedupv1.FinishBatchRequest) (*dedupv1.FinishBatchResponse, error) {
	consumer, reqs := req.GetConsumer(), req.GetItems()
	items, err := s.writeBatch(ctx, consumer, keysOf(reqs), func(i int, v *validator, policy policy.Effective) store.Command {
		it := reqs[i]
		v.key(it.GetKey())
		v.fencingToken(it.GetFencingToken())
		switch outcome := it.GetOutcome().(type) {
		case *dedupv1.FinishBatchItem_Result:
			v.bytes("result", outcome.Result, policy.MaxResultBytes)
			return store.CompleteParams{Consumer: consumer, Key: it.GetKey(), FencingToken: it.GetFencingToken(),
				Result: outcome.Result, Policy: policy.Store}
		case *dedupv1.FinishBatchItem_Rejection:
			rej := outcome.Rejection
			v.text("rejection.reason", rej.GetReason(), MaxReasonBytes)
			v.text("rejection.message", rej.GetMessage(), MaxMessageBytes)
			v.bytes("rejection.detail", rej.GetDetail(), policy.MaxResultBytes)
			return store.RejectParams{Consumer: consumer, Key: it.GetKey(), FencingToken: it.GetFencingToken(),
				Rejection: store.Rejection{Reason: rej.GetReason(), Message: rej.GetMessage(),
					Detail: rej.GetDetail(), Retryable: rej.GetRetryable()},
				Policy: policy.Store}
		}
		v.fail("outcome", "is required: a result to Complete or a rejection to Reject")
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &dedupv1.FinishBatchResponse{Results: s.recordResults(ctx, consumer, items)}, nil
}

func (s *DedupService) ExtendLeaseBatch(ctx context.Context, req *dedupv1.ExtendLeaseBatchRequest) (*dedupv1.ExtendLeaseBatchResponse, error) {
	consumer, reqs := req.GetConsumer(), req.GetItems()
	items, err := s.writeBatch(ctx, consumer, keysOf(reqs), func(i int, v *validator, policy policy.Effective) store.Command {
		it := reqs[i]
		v.key(it.GetKey())
		v.fencingToken(it.GetFencingToken())
		lease := v.leaseTTL(it.GetLeaseTtl(), MaxTTLCeiling)
		v.leaseWithin(lease, policy)
		return store.ExtendLeaseParams{Consumer: consumer, Key: it.GetKey(), FencingToken: it.GetFencingToken(),
			LeaseTTL: lease, Policy: policy.Store}
	})
	if err != nil {
		return nil, err
	}
	return &dedupv1.ExtendLeaseBatchResponse{Results: s.recordResults(ctx, consumer, items)}, nil
}

// LookupBatch needs no policy, as Lookup does not: only the consumer and
// the number of keys are checked for the whole call.
func (s *DedupService) LookupBatch(ctx context.Context, req *dedupv1.LookupBatchRequest) (*dedupv1.LookupBatchResponse, error) {
	consumer, keys := req.GetConsumer(), req.GetKeys()
	var v validator
	v.consumer(consumer)
	if limit := s.maxBatchItems(); len(keys) > limit {
		v.fail("keys", "has %d keys, more than the limit of %d", len(keys), limit)
	}
	if err := v.result(); err != nil {
		return nil, s.fail(ctx, err, consumer, "")
	}
	items := s.prepare(ctx, consumer, keys, func(i int, v *validator) store.Command {
		v.prefix = ""
		if v.key(keys[i]); v.err != nil {
			v.err.Field = fmt.Sprintf("keys[%d]", i)
		}
		return nil
	})
	var (
		valid []string
		idx   []int
	)
	for i, it := range items {
		if it.res.Err == nil {
			valid = append(valid, it.key)
			idx = append(idx, i)
		}
	}
	var kept payloadBudget
	for start := 0; start < len(valid); start += storeChunk {
		end := min(start+storeChunk, len(valid))
		for j, r := range s.store.LookupBatch(ctx, store.LookupBatchParams{Consumer: consumer, Keys: valid[start:end]}) {
			it := &items[idx[start+j]]
			it.res = store.ItemResult{Record: r.Record, Err: r.Err}
			kept.keep(it)
		}
	}
	return &dedupv1.LookupBatchResponse{Results: s.recordResults(ctx, consumer, items)}, nil
}
