package api

import (
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"

	"github.com/dedupd/dedupd/server/rpcerrors"
)

// errorInfo returns the ErrorInfo of a status, failing the test if absent.
func errorInfo(t *testing.T, st *status.Status) *errdetails.ErrorInfo {
	t.Helper()
	info := rpcerrors.Info(st)
	if info == nil {
		t.Fatalf("status %v has no ErrorInfo", st)
	}
	return info
}
