package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// TestStoreUnavailableLogIsRateLimited: an outage fails every call, but the
// WARN lines with the cause are limited (10 at once, then one a second), so
// a burst of 1,000 failed calls logs at most 10 of them. Nothing here waits
// for the clock: the burst runs in far less than the second a refill takes,
// and the limit holds even if another test used some of the burst.
func TestStoreUnavailableLogIsRateLimited(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cause := fmt.Errorf("%w: pgstore: claim: failed to connect to `user=dedupd database=prod`", store.ErrUnavailable)
	for range 1000 {
		if err := failWith(context.Background(), log, cause, "inventory", "k"); err == nil {
			t.Fatal("failWith returned nil")
		}
	}
	if n := strings.Count(logs.String(), `msg="store unavailable"`); n > 10 {
		t.Fatalf("1000 failed calls logged %d store-unavailable lines, want at most 10", n)
	}
}

// TestConflictFitsAClientsTrailer: a unary refusal over the largest record
// a store may hold (a result of 16 MiB, a detail, every text field at its
// limit) encodes, base64 and all, within the 8 KiB of metadata that gRPC's
// C core (the Python client) accepts by default; past it the client gets
// INTERNAL: RST_STREAM instead of the refusal.
func TestConflictFitsAClientsTrailer(t *testing.T) {
	now := time.Now()
	big := store.Record{
		Consumer: strings.Repeat("c", 128), Key: strings.Repeat("k", MaxKeyBytes), State: store.Rejected, FencingToken: 9,
		Digest: make([]byte, MaxDigestBytes), Owner: strings.Repeat("o", MaxOwnerBytes), Result: make([]byte, 16<<20),
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now, LeaseExpiresAt: now,
		Rejection: &store.Rejection{Reason: strings.Repeat("r", MaxReasonBytes), Message: strings.Repeat("m", MaxMessageBytes), Detail: make([]byte, 1<<20)},
	}
	log := slog.New(slog.DiscardHandler)
	for _, sentinel := range []error{store.ErrDigestMismatch, store.ErrAlreadyFinished, store.ErrLeaseLost} {
		err := failWith(context.Background(), log, &store.ConflictError{Err: sentinel, Record: big}, big.Consumer, big.Key)
		st := status.Convert(err)
		if n := base64.StdEncoding.EncodedLen(proto.Size(st.Proto())); n > 8<<10 {
			t.Errorf("%v: the status trailer is %d bytes, over 8 KiB", sentinel, n)
		}
		var rec *dedupv1.Record
		for _, d := range st.Details() {
			if r, ok := d.(*dedupv1.Record); ok {
				rec = r
			}
		}
		if rec.GetKey() != big.Key || rec.GetOwner() != big.Owner || rec.GetFencingToken() != 9 || rec.GetRejection().GetReason() != big.Rejection.Reason {
			t.Errorf("%v: the record lost what identifies it: %.200v", sentinel, rec)
		}
		if len(rec.GetResult()) != 0 || len(rec.GetRejection().GetDetail()) != 0 {
			t.Errorf("%v: a payload over %d bytes rode along with the refusal", sentinel, MaxRefusalPayloadBytes)
		}
	}

	// At the payload limit, with every other field at its own, the record
	// comes whole and the trailer still fits.
	edge := big
	edge.Result = make([]byte, MaxRefusalPayloadBytes-200)
	edge.Rejection = &store.Rejection{Reason: big.Rejection.Reason, Message: strings.Repeat("m", 100), Detail: make([]byte, 100)}
	st := status.Convert(failWith(context.Background(), log, &store.ConflictError{Err: store.ErrDigestMismatch, Record: edge}, edge.Consumer, edge.Key))
	if n := base64.StdEncoding.EncodedLen(proto.Size(st.Proto())); n > 8<<10 {
		t.Errorf("at the payload limit the status trailer is %d bytes, over 8 KiB", n)
	}
	whole := false
	for _, d := range st.Details() {
		if r, ok := d.(*dedupv1.Record); ok {
			whole = len(r.GetResult()) == len(edge.Result) && len(r.GetRejection().GetDetail()) == 100 && r.GetRejection().GetMessage() == edge.Rejection.Message
		}
	}
	if !whole {
		t.Errorf("a record with %d payload bytes did not come whole with the refusal", MaxRefusalPayloadBytes)
	}
}
