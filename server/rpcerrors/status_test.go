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

// TestStatusMapsTheVocabulary: this package's own errors, and a context's,
// keep their codes and reasons; what it does not know is INTERNAL.
func TestStatusMapsTheVocabulary(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
	}{
		{"malformed", fmt.Errorf("%w: unexpected EOF", ErrMalformedRequest), codes.InvalidArgument, ReasonMalformedRequest},
		{"field", &FieldError{Field: "key", Problem: "is required"}, codes.InvalidArgument, ReasonInvalidField},
		{"deadline", fmt.Errorf("q: %w", context.DeadlineExceeded), codes.DeadlineExceeded, ReasonDeadlineExceeded},
		{"canceled", context.Canceled, codes.Canceled, ReasonCanceled},
		{"bug", errors.New("boom"), codes.Internal, ReasonInternal},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Status(tc.err, "c", "k")
			info := errorInfo(t, st)
			if st.Code() != tc.code || info.GetReason() != tc.reason || info.GetDomain() != ErrorDomain {
				t.Fatalf("status = %v %s/%s, want %v %s/%s", st.Code(), info.GetDomain(), info.GetReason(), tc.code, ErrorDomain, tc.reason)
			}
			if info.GetMetadata()["consumer"] != "c" || info.GetMetadata()["key"] != "k" {
				t.Fatalf("metadata = %v, want consumer and key", info.GetMetadata())
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

// TestNewCutsEveryEchoedValueOnce: a consumer of 16 MB, a key of 10 KiB
// and a refusal whose text repeats them come back as their first
// clip.MaxEchoed bytes and one marker each, so the whole answer stays far
// below the trailer size clients accept.
func TestNewCutsEveryEchoedValueOnce(t *testing.T) {
	huge := strings.Repeat("C", 16<<20)
	longKey := strings.Repeat("k", 10<<10)
	for _, err := range []error{
		fmt.Errorf("tok may not act for consumer %q: %w", huge, ErrPermissionDenied),
		&FieldError{Field: "key", Problem: "is " + longKey},
	} {
		st := Status(err, huge, longKey)
		if n := len(st.Message()); n > clip.MaxEchoed+len(clip.Marker) {
			t.Fatalf("message is %d bytes, want at most %d", n, clip.MaxEchoed+len(clip.Marker))
		}
		info := errorInfo(t, st)
		if got := info.GetMetadata()["consumer"]; got != strings.Repeat("C", clip.MaxEchoed)+clip.Marker {
			t.Fatalf("consumer metadata is not the name cut once: %d bytes", len(got))
		}
		if got := info.GetMetadata()["key"]; got != strings.Repeat("k", clip.MaxEchoed)+clip.Marker {
			t.Fatalf("key metadata is not the key cut once: %d bytes", len(got))
		}
		if n := proto.Size(st.Proto()); n > 5*clip.MaxEchoed {
			t.Fatalf("status is %d bytes, want at most %d", n, 5*clip.MaxEchoed)
		}
	}
}
