package rpcerrors

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
)

// TestStatusMapsInterceptorRefusals: the refusals made before a handler
// runs get their own codes and reasons, and a retry hint when they carry one.
func TestStatusMapsInterceptorRefusals(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		code   codes.Code
		reason string
		retry  time.Duration // 0: no RetryInfo expected
	}{
		{"unauthenticated", fmt.Errorf("no bearer token: %w", ErrUnauthenticated), codes.Unauthenticated, ReasonUnauthenticated, 0},
		{"permission denied", fmt.Errorf("consumer %q: %w", "c", ErrPermissionDenied), codes.PermissionDenied, ReasonPermissionDenied, 0},
		{"rate limited", &RetryAfterError{Err: ErrRateLimited, After: 250 * time.Millisecond}, codes.ResourceExhausted, ReasonRateLimited, 250 * time.Millisecond},
		{"overloaded", &RetryAfterError{Err: ErrOverloaded, After: time.Second}, codes.ResourceExhausted, ReasonOverloaded, time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := Status(tc.err, "c", "")
			if st.Code() != tc.code || st.Message() != tc.err.Error() {
				t.Fatalf("status = %v %q, want %v %q", st.Code(), st.Message(), tc.code, tc.err.Error())
			}
			if info := errorInfo(t, st); info.GetReason() != tc.reason || info.GetMetadata()["consumer"] != "c" {
				t.Fatalf("ErrorInfo = %v, want reason %s with the consumer", info, tc.reason)
			}
			var retry *errdetails.RetryInfo
			for _, d := range st.Details() {
				if r, ok := d.(*errdetails.RetryInfo); ok {
					retry = r
				}
			}
			if got := retry.GetRetryDelay().AsDuration(); got != tc.retry || (retry != nil) != (tc.retry > 0) {
				t.Fatalf("RetryInfo = %v, want a delay of %v", retry, tc.retry)
			}
		})
	}
}
