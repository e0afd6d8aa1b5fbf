package rpcerrors

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
