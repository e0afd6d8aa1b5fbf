// Package recordpb converts stored records to their dedup.v1 wire form. It
// is a leaf beside server/store, so that both the handlers (server/api) and
// the error mapping (server/rpcerrors, which attaches the stored record to a
// conflict) use the one conversion.
package recordpb

import (
	"time"

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

// FromStore converts a stored record to its API form.
func FromStore(r store.Record) *dedupv1.Record {
	pr := &dedupv1.Record{
		Consumer:       r.Consumer,
		Key:            r.Key,
		State:          stateToProto[r.State],
		Digest:         r.Digest,
		FencingToken:   r.FencingToken,
		Attempts:       r.Attempts,
		Owner:          r.Owner,
		Result:         r.Result,
		CreatedAt:      Timestamp(r.CreatedAt),
		UpdatedAt:      Timestamp(r.UpdatedAt),
		LeaseExpiresAt: Timestamp(r.LeaseExpiresAt),
		ExpiresAt:      Timestamp(r.ExpiresAt),
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

// Timestamp converts a time to its API form; the zero time (not set) is nil.
func Timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
