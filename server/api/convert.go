package api

import (
	"google.golang.org/protobuf/types/known/durationpb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/recordpb"
	"github.com/dedupd/dedupd/server/store"
)

var outcomeToProto = map[store.Outcome]dedupv1.Outcome{
	store.Acquired:         dedupv1.Outcome_OUTCOME_ACQUIRED,
	store.InProgress:       dedupv1.Outcome_OUTCOME_IN_PROGRESS,
	store.AlreadyCompleted: dedupv1.Outcome_OUTCOME_COMPLETED,
	store.AlreadyRejected:  dedupv1.Outcome_OUTCOME_REJECTED,
}

func claimResponse(res store.ClaimResult) *dedupv1.ClaimResponse {
	resp := &dedupv1.ClaimResponse{
		Outcome: outcomeToProto[res.Outcome],
		Record:  recordpb.FromStore(res.Record),
	}
	switch res.Outcome {
	case store.Acquired:
		resp.FencingToken = res.Record.FencingToken
	case store.InProgress:
		resp.RetryAfter = durationpb.New(res.RetryAfter)
	}
	return resp
}
