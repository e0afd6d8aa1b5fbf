package api

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

var stateToProto = map[store.State]dedupv1.State{
	store.Pending:   dedupv1.State_STATE_PENDING,
	store.Completed: dedupv1.State_STATE_COMPLETED,
	store.Rejected:  dedupv1.State_STATE_REJECTED,
	store.Released:  dedupv1.State_STATE_RELEASED,
}

var outcomeToProto = map[store.Outcome]dedupv1.Outcome{
	store.Acquired:         dedupv1.Outcome_OUTCOME_ACQUIRED,
	store.InProgress:       dedupv1.Outcome_OUTCOME_IN_PROGRESS,
	store.AlreadyCompleted: dedupv1.Outcome_OUTCOME_COMPLETED,
	store.AlreadyRejected:  dedupv1.Outcome_OUTCOME_REJECTED,
}

// RecordToProto converts a stored record to its API form.
func RecordToProto(r store.Record) *dedupv1.Record {
	pr := &dedupv1.Record{
		Consumer:       r.Consumer,
		Key:            r.Key,
		State:          stateToProto[r.State],
		Digest:         r.Digest,
		FencingToken:   r.FencingToken,
		Attempts:       r.Attempts,
		Owner:          r.Owner,
		Result:         r.Result,
		CreatedAt:      timestamp(r.CreatedAt),
		UpdatedAt:      timestamp(r.UpdatedAt),
		LeaseExpiresAt: timestamp(r.LeaseExpiresAt),
		ExpiresAt:      timestamp(r.ExpiresAt),
	}
	if rj := r.Rejection; rj != nil {
		pr.Rejection = &dedupv1.Rejection{
			Reason:    rj.Reason,
			Message:   rj.Message,
			Detail:    rj.Detail,
			Retryable: rj.Retryable,
		}
	}
	return pr
}

func timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func claimResponse(res store.ClaimResult) *dedupv1.ClaimResponse {
	resp := &dedupv1.ClaimResponse{
		Outcome: outcomeToProto[res.Outcome],
		Record:  RecordToProto(res.Record),
	}
	switch res.Outcome {
	case store.Acquired:
		resp.FencingToken = res.Record.FencingToken
	case store.InProgress:
		resp.RetryAfter = durationpb.New(res.RetryAfter)
	}
	return resp
}
