package client

import (
	"context"
	"time"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Batch calls. Each answers one result per item, in order, each what the
// lone call of that item would have answered; an item's error is an *Error
// matching the same sentinels (ErrDigestMismatch, ErrLeaseLost, ...). The
// error a batch call itself returns concerns the whole call: the consumer,
// the credential, too many items, or the server unreachable. See
// docs/api.md, Batches.

// ClaimItem is one key of a ClaimBatch.
type ClaimItem struct {
	Key    string
	Digest []byte
	ClaimOptions
}

// ClaimItemResult is the answer to one item of a ClaimBatch: a ClaimResult,
// or Err.
type ClaimItemResult struct {
	ClaimResult
	Err error
	// ResultOmitted says the record's result (or rejection message and
	// detail) was left out to keep the reply within 4 MiB: read it with
	// Lookup.
	ResultOmitted bool
}

// ClaimBatch claims many keys of one consumer in one call.
func (c *Client) ClaimBatch(ctx context.Context, consumer string, items []ClaimItem) ([]ClaimItemResult, error) {
	req := &dedupv1.ClaimBatchRequest{Consumer: consumer, Items: make([]*dedupv1.ClaimBatchItem, len(items))}
	for i, it := range items {
		req.Items[i] = &dedupv1.ClaimBatchItem{Key: it.Key, Digest: it.Digest, Owner: it.Owner, LeaseTtl: optionalDuration(it.LeaseTTL)}
	}
	resp, err := c.dedup.ClaimBatch(ctx, req)
	if err != nil {
		return nil, fromStatus(err)
	}
	results := make([]ClaimItemResult, len(resp.GetResults()))
	for i, r := range resp.GetResults() {
		results[i].ResultOmitted = r.GetResultOmitted()
		if e := r.GetError(); e != nil {
			results[i].Err = itemError(e)
			continue
		}
		cl := r.GetClaim()
		results[i].ClaimResult = ClaimResult{Outcome: cl.GetOutcome(), Record: cl.GetRecord(),
			FencingToken: cl.GetFencingToken(), RetryAfter: cl.GetRetryAfter().AsDuration()}
	}
	return results, nil
}

// FinishItem is one outcome of a FinishBatch: a Complete with Result, or,
// when Rejection is set, a Reject.
type FinishItem struct {
	Key          string
	FencingToken int64
	Result       []byte
	Rejection    *Rejection
}

// RecordResult is the answer to one item of a FinishBatch,
// ExtendLeaseBatch or LookupBatch: the record after the call, or Err.
type RecordResult struct {
	Record *Record
	Err    error
	// ResultOmitted: as in ClaimItemResult.
	ResultOmitted bool
}

// FinishBatch records the outcomes of many keys of one consumer in one
// call.
func (c *Client) FinishBatch(ctx context.Context, consumer string, items []FinishItem) ([]RecordResult, error) {
	req := &dedupv1.FinishBatchRequest{Consumer: consumer, Items: make([]*dedupv1.FinishBatchItem, len(items))}
	for i, it := range items {
		item := &dedupv1.FinishBatchItem{Key: it.Key, FencingToken: it.FencingToken,
			Outcome: &dedupv1.FinishBatchItem_Result{Result: it.Result}}
		if r := it.Rejection; r != nil {
			item.Outcome = &dedupv1.FinishBatchItem_Rejection{Rejection: &dedupv1.Rejection{
				Reason: r.Reason, Message: r.Message, Detail: r.Detail, Retryable: r.Retryable}}
		}
		req.Items[i] = item
	}
	resp, err := c.dedup.FinishBatch(ctx, req)
	if err != nil {
		return nil, fromStatus(err)
	}
	return recordResults(resp.GetResults()), nil
}

// ExtendItem is one lease of an ExtendLeaseBatch.
type ExtendItem struct {
	Key          string
	FencingToken int64
	// LeaseTTL is the new lease, from now; the server default when zero.
	LeaseTTL time.Duration
}

// ExtendLeaseBatch extends many leases of one consumer in one call: the
// heartbeat of a whole poll.
func (c *Client) ExtendLeaseBatch(ctx context.Context, consumer string, items []ExtendItem) ([]RecordResult, error) {
	req := &dedupv1.ExtendLeaseBatchRequest{Consumer: consumer, Items: make([]*dedupv1.ExtendLeaseBatchItem, len(items))}
	for i, it := range items {
		req.Items[i] = &dedupv1.ExtendLeaseBatchItem{Key: it.Key, FencingToken: it.FencingToken, LeaseTtl: optionalDuration(it.LeaseTTL)}
	}
	resp, err := c.dedup.ExtendLeaseBatch(ctx, req)
	if err != nil {
		return nil, fromStatus(err)
	}
	return recordResults(resp.GetResults()), nil
}

// LookupBatch reads the records of many keys of one consumer; a key with no
// live record answers ErrNotFound.
func (c *Client) LookupBatch(ctx context.Context, consumer string, keys []string) ([]RecordResult, error) {
	resp, err := c.dedup.LookupBatch(ctx, &dedupv1.LookupBatchRequest{Consumer: consumer, Keys: keys})
	if err != nil {
		return nil, fromStatus(err)
	}
	return recordResults(resp.GetResults()), nil
}

func recordResults(rs []*dedupv1.RecordResult) []RecordResult {
	results := make([]RecordResult, len(rs))
	for i, r := range rs {
		results[i] = RecordResult{Record: r.GetRecord(), ResultOmitted: r.GetResultOmitted()}
		if e := r.GetError(); e != nil {
			results[i].Err = itemError(e)
		}
	}
	return results
}

// itemError turns an item's google.rpc.Status into an *Error, as a lone
// call's error would be.
func itemError(s *spb.Status) error { return fromStatus(status.FromProto(s).Err()) }

func optionalDuration(d time.Duration) *durationpb.Duration {
	if d <= 0 {
		return nil
	}
	return durationpb.New(d)
}
