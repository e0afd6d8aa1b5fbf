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

// FromStore converts a stored record to its API form. Nearly every reply
// carries one, so the record and its four timestamps are one allocation
// (recordBlock) rather than five.
func FromStore(r store.Record) *dedupv1.Record {
	b := new(recordBlock)
	pr := &b.record
	pr.Consumer = r.Consumer
	pr.Key = r.Key
	pr.State = stateToProto[r.State]
	pr.Digest = r.Digest
	pr.FencingToken = r.FencingToken
	pr.Attempts = r.Attempts
	pr.Owner = r.Owner
	pr.Result = r.Result
	pr.CreatedAt = b.timestamp(0, r.CreatedAt)
	pr.UpdatedAt = b.timestamp(1, r.UpdatedAt)
	pr.LeaseExpiresAt = b.timestamp(2, r.LeaseExpiresAt)
	pr.ExpiresAt = b.timestamp(3, r.ExpiresAt)
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

// recordBlock is a record with room for its timestamps. The timestamps
// point into it, so it lives as long as any part of the record does.
type recordBlock struct {
	record     dedupv1.Record
	timestamps [4]timestamppb.Timestamp
}

// timestamp is Timestamp(t) kept in the block's slot i.
func (b *recordBlock) timestamp(i int, t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	ts := &b.timestamps[i]
	ts.Seconds, ts.Nanos = t.Unix(), int32(t.Nanosecond())
	return ts
}

// Timestamp converts a time to its API form; the zero time (not set) is nil.
func Timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
