package main

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func withInfo(t *testing.T, code codes.Code, msg, reason string, meta map[string]string) error {
	t.Helper()
	s, err := status.New(code, msg).WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "dedup.v1", Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	return s.Err()
}

func TestDescribeError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"reason with subject", withInfo(t, codes.NotFound, "no record for this key", "RECORD_NOT_FOUND",
			map[string]string{"consumer": "x", "key": "y"}),
			`RECORD_NOT_FOUND: no record for this key (consumer "x", key "y")`},
		{"subject already in the message", withInfo(t, codes.NotFound, `no policy for "x"`, "POLICY_NOT_FOUND",
			map[string]string{"consumer": "x"}),
			`POLICY_NOT_FOUND: no policy for "x"`},
		{"connection refused", status.Error(codes.Unavailable,
			`connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`),
			"cannot reach dedupd at 127.0.0.1:1: connection refused (is it running? set --server or DEDUPD_ADDR)"},
		{"unauthenticated", status.Error(codes.Unauthenticated, "missing token"),
			"UNAUTHENTICATED: missing token (pass a token with --token or DEDUPCTL_TOKEN, or a listed client certificate with --tls-cert/--tls-key)"},
		{"dedupd's unauthenticated", withInfo(t, codes.Unauthenticated, "no bearer token", "UNAUTHENTICATED",
			map[string]string{"consumer": "shop"}),
			`UNAUTHENTICATED: no bearer token (consumer "shop") (pass a token with --token or DEDUPCTL_TOKEN, or a listed client certificate with --tls-cert/--tls-key)`},
		{"dedupd's permission denied", withInfo(t, codes.PermissionDenied, "shop may not call AdminService", "PERMISSION_DENIED", nil),
			"PERMISSION_DENIED: shop may not call AdminService (admin commands need an admin token; records and reconcile a token that covers the consumer)"},
		{"plain code", status.Error(codes.DeadlineExceeded, "context deadline exceeded"),
			"DEADLINE_EXCEEDED: context deadline exceeded"},
		{"not a status", errors.New("boom"), "boom"},
	}
	for _, tt := range tests {
		if got := describeError(tt.err, "127.0.0.1:1"); got != tt.want {
			t.Errorf("%s: describeError = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, exitOK},
		{usagef("bad"), exitUsage},
		{fmt.Errorf("wrapped: %w", usagef("bad")), exitUsage},
		{errors.New(`unknown command "x" for "dedupctl"`), exitUsage},
		{interruptedError{"stopped"}, exitInterrupted},
		{status.Error(codes.NotFound, "x"), exitFailure},
		{errAborted, exitFailure},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestCodeName(t *testing.T) {
	for c, want := range map[codes.Code]string{
		codes.NotFound: "NOT_FOUND", codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.Internal: "INTERNAL",
		codes.FailedPrecondition: "FAILED_PRECONDITION",
	} {
		if got := codeName(c); got != want {
			t.Errorf("codeName(%v) = %q, want %q", c, got, want)
		}
	}
}
