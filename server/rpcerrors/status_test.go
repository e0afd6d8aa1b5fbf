package rpcerrors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/dedupd/dedupd/internal/clip"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/store"
)

// errorInfo returns the ErrorInfo of a status, failing the test if absent.
func errorInfo(t *testing.T, st *status.Status) *errdetails.ErrorInfo {
	t.Helper()
	info := Info(st)
	if info == nil {
		t.Fatalf("status %v has no ErrorInfo", st)
	}
	return info
}

func TestStatusMapsEveryDomainError(t *testing.T) {
	stored := store.Record{Consumer: "c", Key: "k", State: store.Completed, FencingToken: 7, Result: []byte("r")}
	cases := []struct {
		name       string
		err        error
		code       codes.Code
		reason     string
		withRecord bool
	}{
		{"not found", fmt.Errorf("lookup: %w", store.ErrNotFound), codes.NotFound, ReasonNotFound, false},
		{"no policy", fmt.Errorf("delete policy: %w", store.ErrNoPolicy), codes.NotFound, ReasonPolicyNotFound, false},
		{"digest mismatch", &store.ConflictError{Err: store.ErrDigestMismatch, Record: stored}, codes.FailedPrecondition, ReasonDigestMismatch, true},
		{"already finished", &store.ConflictError{Err: store.ErrAlreadyFinished, Record: stored}, codes.FailedPrecondition, ReasonAlreadyFinished, true},
		{"lease lost with record", &store.ConflictError{Err: store.ErrLeaseLost, Record: stored}, codes.Aborted, ReasonLeaseLost, true},
		{"lease lost without record", store.ErrLeaseLost, codes.Aborted, ReasonLeaseLost, false},
		{"unavailable", fmt.Errorf("dial: %w", store.ErrUnavailable), codes.Unavailable, ReasonStoreUnavailable, false},
		{"deadline", fmt.Errorf("q: %w", context.DeadlineExceeded), codes.DeadlineExceeded, ReasonDeadlineExceeded, false},
		{"canceled", context.Canceled, codes.Canceled, ReasonCanceled, false},
		{"field", &FieldError{Field: "key", Problem: "is required"}, codes.InvalidArgument, ReasonInvalidField, false},
		{"bug", errors.New("boom"), codes.Internal, ReasonInternal, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Status(tc.err, "c", "k")
			if st.Code() != tc.code {
				t.Fatalf("code = %v, want %v", st.Code(), tc.code)
			}
			info := errorInfo(t, st)
			if info.GetReason() != tc.reason || info.GetDomain() != ErrorDomain {
				t.Fatalf("ErrorInfo = %s/%s, want %s/%s", info.GetDomain(), info.GetReason(), ErrorDomain, tc.reason)
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

func TestStatusHidesInternalCauses(t *testing.T) {
	st := Status(errors.New("password=hunter2 in connection string"), "", "")
	if st.Message() != "internal error" {
		t.Fatalf("message = %q, want the cause hidden", st.Message())
	}
}

func TestStatusKeepsExistingStatus(t *testing.T) {
	in := status.Error(codes.ResourceExhausted, "slow down")
	if got := Status(in, "c", "k"); got.Code() != codes.ResourceExhausted {
		t.Fatalf("code = %v, want the original ResourceExhausted", got.Code())
	}
}

// TestStatusEchoesBoundedValues: a consumer of 16 MB, a key of 10 KiB and a
// refusal whose text repeats them come back cut to MaxEchoBytes each, so
// the whole answer stays far below the trailer size clients accept.
func TestStatusEchoesBoundedValues(t *testing.T) {
	huge := strings.Repeat("C", 16<<20)
	longKey := strings.Repeat("k", 10<<10)
	cases := []struct {
		name string
		err  error
	}{
		{"permission denied naming the consumer", fmt.Errorf("tok may not act for consumer %q: %w", huge, ErrPermissionDenied)},
		{"invalid field", &FieldError{Field: "key", Problem: "is " + longKey}},
		{"conflict", &store.ConflictError{Err: store.ErrLeaseLost, Record: store.Record{Consumer: huge, Key: longKey, State: store.Pending}}},
		{"not found", store.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Status(tc.err, huge, longKey)
			if n := len(st.Message()); n > MaxEchoBytes+len(clip.Marker) {
				t.Fatalf("message is %d bytes, want at most %d", n, MaxEchoBytes+len(clip.Marker))
			}
			info := errorInfo(t, st)
			for k, v := range info.GetMetadata() {
				if len(v) > MaxEchoBytes+len(clip.Marker) {
					t.Fatalf("metadata %s is %d bytes, want at most %d", k, len(v), MaxEchoBytes+len(clip.Marker))
				}
			}
			if info.GetMetadata()["consumer"] != strings.Repeat("C", MaxEchoBytes)+clip.Marker {
				t.Fatalf("consumer metadata is not the cut name: %.40q", info.GetMetadata()["consumer"])
			}
			// Only the conflict carries the stored record, which is the
			// store's (its key is at most 512 bytes in practice); what
			// the caller sent is bounded.
			if tc.name != "conflict" {
				if n := proto.Size(st.Proto()); n > 5*MaxEchoBytes {
					t.Fatalf("status is %d bytes, want at most %d", n, 5*MaxEchoBytes)
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
		if got := Status(tc.err, "c", "key-9f2c").Message(); got != tc.want {
			t.Errorf("Status(%q).Message() = %q, want %q", tc.err, got, tc.want)
		}
	}
}
