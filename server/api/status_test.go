package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/internal/clip"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
	"github.com/dedupd/dedupd/server/store"
)

func TestStatusMapsEveryDomainError(t *testing.T) {
	stored := store.Record{Consumer: "c", Key: "k", State: store.Completed, FencingToken: 7, Result: []byte("r")}
	cases := []struct {
		name       string
		err        error
		code       codes.Code
		reason     string
		withRecord bool
	}{
		{"not found", fmt.Errorf("lookup: %w", store.ErrNotFound), codes.NotFound, rpcerrors.ReasonNotFound, false},
		{"no policy", fmt.Errorf("delete policy: %w", store.ErrNoPolicy), codes.NotFound, rpcerrors.ReasonPolicyNotFound, false},
		{"digest mismatch", &store.ConflictError{Err: store.ErrDigestMismatch, Record: stored}, codes.FailedPrecondition, rpcerrors.ReasonDigestMismatch, true},
		{"already finished", &store.ConflictError{Err: store.ErrAlreadyFinished, Record: stored}, codes.FailedPrecondition, rpcerrors.ReasonAlreadyFinished, true},
		{"lease lost with record", &store.ConflictError{Err: store.ErrLeaseLost, Record: stored}, codes.Aborted, rpcerrors.ReasonLeaseLost, true},
		{"lease lost without record", store.ErrLeaseLost, codes.Aborted, rpcerrors.ReasonLeaseLost, false},
		{"unavailable", fmt.Errorf("dial: %w", store.ErrUnavailable), codes.Unavailable, rpcerrors.ReasonStoreUnavailable, false},
		{"deadline", fmt.Errorf("q: %w", context.DeadlineExceeded), codes.DeadlineExceeded, rpcerrors.ReasonDeadlineExceeded, false},
		{"canceled", context.Canceled, codes.Canceled, rpcerrors.ReasonCanceled, false},
		{"field", &rpcerrors.FieldError{Field: "key", Problem: "is required"}, codes.InvalidArgument, rpcerrors.ReasonInvalidField, false},
		{"bug", errors.New("boom"), codes.Internal, rpcerrors.ReasonInternal, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := wireStatus(tc.err, "c", "k")
			if st.Code() != tc.code {
				t.Fatalf("code = %v, want %v", st.Code(), tc.code)
			}
			info := errorInfo(t, st)
			if info.GetReason() != tc.reason || info.GetDomain() != rpcerrors.ErrorDomain {
				t.Fatalf("ErrorInfo = %s/%s, want %s/%s", info.GetDomain(), info.GetReason(), rpcerrors.ErrorDomain, tc.reason)
			}
			if info.GetMetadata()["consumer"] != "c" || info.GetMetadata()["key"] != "k" {
				t.Fatalf("metadata = %v, want consumer and key", info.GetMetadata())
			}
			var rec *dedupv1.Record
			for _, d := range st.Details() {
				if r, ok := d.(*dedupv1.Record); ok {
					rec = r
				}
			}
			if tc.withRecord != (rec != nil) {
				t.Fatalf("record detail present = %v, want %v", rec != nil, tc.withRecord)
			}
			if rec != nil && (rec.GetFencingToken() != 7 || string(rec.GetResult()) != "r") {
				t.Fatalf("record detail = %v, want the stored record", rec)
			}
		})
	}
}

// TestLeaseLostSaysWhetherARecordExists: LEASE_LOST keeps its code and
// reason either way, and says "no record" (message and metadata) exactly
// when the store had none to show.
func TestLeaseLostSaysWhetherARecordExists(t *testing.T) {
	stored := store.Record{Consumer: "c", Key: "k", State: store.Pending, FencingToken: 3}
	for _, tc := range []struct {
		name     string
		err      error
		noRecord bool
	}{
		{"another holder", &store.ConflictError{Err: store.ErrLeaseLost, Record: stored}, false},
		{"no record", fmt.Errorf("complete: %w", store.ErrLeaseLost), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := wireStatus(tc.err, "c", "k")
			info := errorInfo(t, st)
			if st.Code() != codes.Aborted || info.GetReason() != rpcerrors.ReasonLeaseLost {
				t.Fatalf("%v %s, want ABORTED LEASE_LOST", st.Code(), info.GetReason())
			}
			says := strings.Contains(st.Message(), "no record exists")
			if says != tc.noRecord || (info.GetMetadata()["record"] == "none") != tc.noRecord {
				t.Fatalf("message %q, metadata %v; want \"no record\" %v", st.Message(), info.GetMetadata(), tc.noRecord)
			}
		})
	}
}

// TestStatusEchoesBoundedValues: a consumer of 16 MB, a key of 10 KiB and a
// refusal whose text repeats them come back cut to clip.MaxEchoed each, so
// the whole answer stays far below the trailer size clients accept.
func TestStatusEchoesBoundedValues(t *testing.T) {
	huge := strings.Repeat("C", 16<<20)
	longKey := strings.Repeat("k", 10<<10)
	cases := []struct {
		name string
		err  error
	}{
		{"permission denied naming the consumer", fmt.Errorf("tok may not act for consumer %q: %w", huge, rpcerrors.ErrPermissionDenied)},
		{"invalid field", &rpcerrors.FieldError{Field: "key", Problem: "is " + longKey}},
		{"conflict", &store.ConflictError{Err: store.ErrLeaseLost, Record: store.Record{Consumer: huge, Key: longKey, State: store.Pending}}},
		{"not found", store.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := wireStatus(tc.err, huge, longKey)
			if n := len(st.Message()); n > clip.MaxEchoed+len(clip.Marker) {
				t.Fatalf("message is %d bytes, want at most %d", n, clip.MaxEchoed+len(clip.Marker))
			}
			info := errorInfo(t, st)
			for k, v := range info.GetMetadata() {
				if len(v) > clip.MaxEchoed+len(clip.Marker) {
					t.Fatalf("metadata %s is %d bytes, want at most %d", k, len(v), clip.MaxEchoed+len(clip.Marker))
				}
			}
			if info.GetMetadata()["consumer"] != strings.Repeat("C", clip.MaxEchoed)+clip.Marker {
				t.Fatalf("consumer metadata is not the cut name: %.40q", info.GetMetadata()["consumer"])
			}
			// Only the conflict carries the stored record, which is the
			// store's (its key is at most 512 bytes in practice); what
			// the caller sent is bounded.
			if tc.name != "conflict" {
				if n := proto.Size(st.Proto()); n > 5*clip.MaxEchoed {
					t.Fatalf("status is %d bytes, want at most %d", n, 5*clip.MaxEchoed)
				}
			}
		})
	}
}

// TestStatusTellsCallersNoStoreDetails: a store's error text (a driver's
// connect error names the database user, name and address) never reaches
// the caller; each class has its fixed message, and a conflict's message
// leaves out the key, since the message is also logged.
func TestStatusTellsCallersNoStoreDetails(t *testing.T) {
	const secret = "failed to connect to `user=dedupd database=prod`: 10.1.2.3:5432"
	cases := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w: pgstore: claim: %s", store.ErrUnavailable, secret), UnavailableMessage},
		{fmt.Errorf("pgstore: claim: %s: %w", secret, context.DeadlineExceeded), context.DeadlineExceeded.Error()},
		{fmt.Errorf("pgstore: %s: %w", secret, context.Canceled), context.Canceled.Error()},
		{fmt.Errorf("pgstore: %s: %w", secret, store.ErrNotFound), store.ErrNotFound.Error()},
		{&store.ConflictError{Err: store.ErrDigestMismatch, Record: store.Record{Consumer: "c", Key: "key-9f2c", State: store.Completed, FencingToken: 3}},
			store.ErrDigestMismatch.Error() + " (state COMPLETED, fencing token 3)"},
	}
	for _, tc := range cases {
		if got := wireStatus(tc.err, "c", "key-9f2c").Message(); got != tc.want {
			t.Errorf("Status(%q).Message() = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestStatusMapsStreamRefusals: the stream refusals keep their codes and
// reasons (the clients branch on them), with the stored stream in the
// metadata and as a detail.
func TestStatusMapsStreamRefusals(t *testing.T) {
	stored := store.Stream{Consumer: "c", Stream: "order-1", HighWater: 4, Mode: store.Dense, FencingToken: 2}
	cases := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
		meta   map[string]string
	}{
		{"gap", &store.StreamConflictError{Err: store.ErrSequenceGap, Stream: stored, Expected: 5}, codes.FailedPrecondition,
			rpcerrors.ReasonSequenceGap, map[string]string{"stream": "order-1", "high_water": "4", "mode": "DENSE", "fencing_token": "2", "expected_sequence": "5"}},
		{"mode", &store.StreamConflictError{Err: store.ErrModeMismatch, Stream: stored}, codes.FailedPrecondition,
			rpcerrors.ReasonStreamModeMismatch, map[string]string{"stream": "order-1", "high_water": "4", "mode": "DENSE", "fencing_token": "2"}},
		{"lease lost", &store.StreamConflictError{Err: store.ErrLeaseLost, Stream: stored}, codes.Aborted,
			rpcerrors.ReasonLeaseLost, map[string]string{"stream": "order-1", "high_water": "4", "mode": "DENSE", "fencing_token": "2"}},
		{"bare mode mismatch", fmt.Errorf("policy: %w", store.ErrModeMismatch), codes.FailedPrecondition, rpcerrors.ReasonStreamModeMismatch, nil},
		{"missing stream", store.ErrStreamNotFound, codes.NotFound, rpcerrors.ReasonStreamNotFound, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := wireStatus(tc.err, "c", "")
			info := errorInfo(t, st)
			if st.Code() != tc.code || info.GetReason() != tc.reason {
				t.Fatalf("status = %v %s, want %v %s", st.Code(), info.GetReason(), tc.code, tc.reason)
			}
			for k, v := range tc.meta {
				if got := info.GetMetadata()[k]; got != v {
					t.Errorf("metadata %s = %q, want %q", k, got, v)
				}
			}
			var detail *dedupv1.Stream
			for _, d := range st.Details() {
				if s, ok := d.(*dedupv1.Stream); ok {
					detail = s
				}
			}
			if (detail != nil) != (tc.meta != nil) || detail != nil && detail.GetHighWater() != 4 {
				t.Fatalf("stream detail = %v, want it with a stored stream only", detail)
			}
		})
	}
}

// TestStreamIDIsCutOnce: a stream id in a refusal's metadata is cut once,
// at the echo limit, as a key is: the longest valid id (MaxKeyBytes) comes
// back whole, and a longer one is its first clip.MaxEchoed bytes with one
// marker (before, it was cut to 128 and then again).
func TestStreamIDIsCutOnce(t *testing.T) {
	for _, tc := range []struct{ id, want string }{
		{strings.Repeat("s", MaxKeyBytes), strings.Repeat("s", MaxKeyBytes)},
		{strings.Repeat("s", 10<<10), strings.Repeat("s", clip.MaxEchoed) + clip.Marker},
	} {
		err := &store.StreamConflictError{Err: store.ErrSequenceGap, Stream: store.Stream{Consumer: "c", Stream: tc.id, Mode: store.Dense}, Expected: 1}
		if got := errorInfo(t, wireStatus(err, "c", "")).GetMetadata()["stream"]; got != tc.want {
			t.Errorf("stream of %d bytes echoed as %d bytes, want %d", len(tc.id), len(got), len(tc.want))
		}
	}
}

// TestEveryStoreRefusalHasItsReason: each refusal of the store contract,
// bare or wrapped, is answered with a listed reason, never INTERNAL; a new
// refusal in store without a wire class fails here.
func TestEveryStoreRefusalHasItsReason(t *testing.T) {
	listed := map[string]bool{}
	for _, r := range rpcerrors.Reasons {
		listed[r] = true
	}
	for _, r := range store.Refusals() {
		for _, err := range []error{r.Err, fmt.Errorf("op: %w", r.Err)} {
			st := wireStatus(err, "c", "k")
			reason := errorInfo(t, st).GetReason()
			if st.Code() == codes.Internal || !listed[reason] {
				t.Errorf("%s (%v): %v %s, want a listed refusal reason", r.Class, err, st.Code(), reason)
			}
			// LEASE_LOST without a record adds a fixed sentence of its own
			// (NoRecordMessage); nothing from the store follows either.
			if msg := strings.TrimSuffix(st.Message(), NoRecordMessage); msg != r.Err.Error() {
				t.Errorf("%s: message %q, want the sentinel's fixed text %q", r.Class, st.Message(), r.Err.Error())
			}
		}
	}
}
