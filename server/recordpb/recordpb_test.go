package recordpb

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// TestFromStoreIsTheFieldByFieldForm: the record built in one block equals
// the one built field by field with timestamppb.New, for every state, with
// and without each time and a rejection; and two records share nothing.
func TestFromStoreIsTheFieldByFieldForm(t *testing.T) {
	at := time.Date(2026, 12, 2, 4, 5, 6, 789, time.UTC)
	before := time.Date(1960, 1, 1, 0, 0, 0, 1, time.FixedZone("x", 3600))
	full := store.Record{Consumer: "c", Key: "k", State: store.Completed, Digest: []byte("d"), FencingToken: 7,
		Attempts: 2, Owner: "o", Result: []byte("r"), CreatedAt: before, UpdatedAt: at,
		LeaseExpiresAt: at.Add(time.Second), ExpiresAt: at.Add(time.Hour)}
	rejected := full
	rejected.State, rejected.Rejection = store.Rejected, &store.Rejection{Reason: "bad", Message: "m", Detail: []byte("x"), Retryable: true}
	pending := store.Record{Consumer: "c", Key: "k", State: store.Pending, CreatedAt: at}
	released := full
	released.State, released.LeaseExpiresAt, released.Result = store.Released, time.Time{}, nil
	for _, r := range []store.Record{full, rejected, pending, released, {}} {
		want := &dedupv1.Record{Consumer: r.Consumer, Key: r.Key, State: stateToProto[r.State], Digest: r.Digest,
			FencingToken: r.FencingToken, Attempts: r.Attempts, Owner: r.Owner, Result: r.Result,
			CreatedAt: ts(r.CreatedAt), UpdatedAt: ts(r.UpdatedAt), LeaseExpiresAt: ts(r.LeaseExpiresAt), ExpiresAt: ts(r.ExpiresAt)}
		if rj := r.Rejection; rj != nil {
			want.Rejection = &dedupv1.Rejection{Reason: rj.Reason, Message: rj.Message, Detail: rj.Detail, Retryable: rj.Retryable}
		}
		got := FromStore(r)
		if !proto.Equal(got, want) {
			t.Errorf("FromStore(%+v) = %v, want %v", r, got, want)
		}
		if again := FromStore(r); again.GetCreatedAt() != nil && again.GetCreatedAt() == got.GetCreatedAt() {
			t.Error("two records share a timestamp")
		}
	}
}

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}
