package client

import (
	"errors"
	"testing"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// Every reason the server can send (every value of the proto enum
// ErrorReason but UNSPECIFIED) has exactly one handling decision here: a
// sentinel, or a documented match by gRPC code. A reason added to the enum
// without a decision fails this test.
func TestEveryServerReasonHasAHandlingDecision(t *testing.T) {
	values := dedupv1.ErrorReason(0).Descriptor().Values()
	seen := map[string]bool{}
	for i := range values.Len() {
		v := values.Get(i)
		if v.Number() == 0 {
			continue
		}
		reason := string(v.Name())
		seen[reason] = true
		_, sentinel := reasonErrors[reason]
		_, byCode := reasonsByCode[reason]
		if sentinel == byCode {
			t.Errorf("reason %s: sentinel %v, by code %v; want exactly one decision", reason, sentinel, byCode)
		}
	}
	for reason := range reasonErrors {
		if !seen[reason] {
			t.Errorf("reasonErrors has %q, which the enum ErrorReason does not", reason)
		}
	}
	for reason := range reasonsByCode {
		if !seen[reason] {
			t.Errorf("reasonsByCode has %q, which the enum ErrorReason does not", reason)
		}
	}
}

// The wire strings stay what they were before the enum: spelled out here,
// not derived from the enum, so a renamed value fails.
func TestReasonWireStrings(t *testing.T) {
	for reason, want := range map[string]error{
		"DIGEST_MISMATCH": ErrDigestMismatch, "LEASE_LOST": ErrLeaseLost,
		"ALREADY_FINISHED": ErrAlreadyFinished, "RECORD_NOT_FOUND": ErrNotFound,
		"INVALID_FIELD": ErrInvalidArgument, "MALFORMED_REQUEST": ErrInvalidArgument,
		"STORE_UNAVAILABLE": ErrUnavailable, "UNAUTHENTICATED": ErrUnauthenticated,
		"PERMISSION_DENIED": ErrPermissionDenied,
	} {
		if !errors.Is(&Error{Reason: reason}, want) {
			t.Errorf("an *Error with reason %s does not match %v", reason, want)
		}
	}
}
