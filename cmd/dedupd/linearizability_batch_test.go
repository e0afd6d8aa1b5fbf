package main

import (
	"context"

	"google.golang.org/grpc/status"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// nextBatch makes a batch of 2 to 4 calls of first's kind, on the keys of
// keySet, repeats of a key included.
func (cl *lzClient) nextBatch(first lzInput, keySet int) []lzInput {
	ins := []lzInput{first}
	for range 1 + cl.rng.IntN(3) {
		for {
			in := cl.nextInput(keySet)
			if in.op == first.op {
				ins = append(ins, in)
				break
			}
		}
	}
	return ins
}

// lzBatchCall makes one batch call of ins, all of one kind, and turns each
// item's answer into an lzOutput as lzCall does the lone call's. When the
// call fails whole, each item gets the call's error.
func lzBatchCall(c dedupv1.DedupServiceClient, ins []lzInput) []lzOutput {
	ctx, cancel := context.WithTimeout(context.Background(), lzCallDeadline)
	defer cancel()
	const consumer = "lz"
	outs := make([]lzOutput, len(ins))
	var (
		records  []*dedupv1.RecordResult
		outcomes = make([]string, len(ins))
		errs     = make([]error, len(ins))
		err      error
	)
	switch ins[0].op {
	case lzClaim:
		req := &dedupv1.ClaimBatchRequest{Consumer: consumer}
		for _, in := range ins {
			req.Items = append(req.Items, &dedupv1.ClaimBatchItem{Key: in.key, Digest: []byte(in.digest), Owner: in.owner})
		}
		var r *dedupv1.ClaimBatchResponse
		if r, err = c.ClaimBatch(ctx, req); err == nil {
			for i, res := range r.GetResults() {
				records = append(records, &dedupv1.RecordResult{})
				if e := res.GetError(); e != nil {
					errs[i] = status.FromProto(e).Err()
					continue
				}
				outcomes[i] = outcomeName(res.GetClaim().GetOutcome())
				records[i].Result = &dedupv1.RecordResult_Record{Record: res.GetClaim().GetRecord()}
			}
		}
	case lzComplete, lzReject:
		req := &dedupv1.FinishBatchRequest{Consumer: consumer}
		for _, in := range ins {
			item := &dedupv1.FinishBatchItem{Key: in.key, FencingToken: in.token,
				Outcome: &dedupv1.FinishBatchItem_Result{Result: []byte(in.result)}}
			if in.op == lzReject {
				item.Outcome = &dedupv1.FinishBatchItem_Rejection{Rejection: &dedupv1.Rejection{Reason: in.reason, Retryable: in.retryable}}
			}
			req.Items = append(req.Items, item)
		}
		var r *dedupv1.FinishBatchResponse
		r, err = c.FinishBatch(ctx, req)
		records = r.GetResults()
	case lzExtend:
		req := &dedupv1.ExtendLeaseBatchRequest{Consumer: consumer}
		for _, in := range ins {
			req.Items = append(req.Items, &dedupv1.ExtendLeaseBatchItem{Key: in.key, FencingToken: in.token})
		}
		var r *dedupv1.ExtendLeaseBatchResponse
		r, err = c.ExtendLeaseBatch(ctx, req)
		records = r.GetResults()
	case lzLookup:
		req := &dedupv1.LookupBatchRequest{Consumer: consumer}
		for _, in := range ins {
			req.Keys = append(req.Keys, in.key)
		}
		var r *dedupv1.LookupBatchResponse
		r, err = c.LookupBatch(ctx, req)
		records = r.GetResults()
	}
	for i := range ins {
		switch {
		case err != nil:
			outs[i] = answerOutput(nil, lzOutput{}, err)
		case errs[i] != nil:
			outs[i] = answerOutput(nil, lzOutput{}, errs[i])
		case records[i].GetError() != nil:
			outs[i] = answerOutput(nil, lzOutput{}, status.FromProto(records[i].GetError()).Err())
		default:
			outs[i] = answerOutput(records[i].GetRecord(), lzOutput{outcome: outcomes[i]}, nil)
		}
		// The model's refusals are a unary call's, which leaves out a
		// payload over 1 KiB (docs/api.md, Errors); a batch item's refusal
		// carries it whole, and that difference is not compared here.
		if outs[i].reason != "" && outs[i].hasRecord {
			outs[i] = lzRefusal(outs[i].reason, outs[i].record)
		}
	}
	return outs
}
