package server

import (
	"testing"

	"google.golang.org/grpc"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/api"
)

// TestReplyPlanOfEveryMethod: every unary method of every service has the
// plan written here by hand, so a new method is planned on purpose (a
// write taken for a read would be refused after it wrote).
func TestReplyPlanOfEveryMethod(t *testing.T) {
	const batch, read, write = "batch", "read", "write"
	want := map[string]string{
		"SetPolicy": write, "GetPolicy": read, "ListPolicies": read, "DeletePolicy": write,
		"DeleteRecord": write, "Stats": read,
		"Claim": write, "Complete": write, "Reject": write, "Lookup": read, "ExtendLease": write,
		"ListRecords": read, "ClaimBatch": batch, "FinishBatch": batch, "ExtendLeaseBatch": batch, "LookupBatch": read,
		"ClaimStream": write, "CompleteStream": write, "RejectStream": write, "ReleaseStream": write,
		"ExtendStreamLease": write, "GetStream": read, "ListStreams": read, "ResetStream": write,
		"SetStreamPolicy": write, "GetStreamPolicy": read, "DeleteStreamPolicy": write,
	}
	for _, desc := range []grpc.ServiceDesc{dedupv1.DedupService_ServiceDesc, dedupv1.AdminService_ServiceDesc,
		dedupv1.StreamService_ServiceDesc, dedupv1.StreamAdminService_ServiceDesc} {
		for _, m := range desc.Methods {
			kind, ok := want[m.MethodName]
			if !ok {
				t.Errorf("%s/%s has no plan in this test: decide whether it reads, writes or is a batch", desc.ServiceName, m.MethodName)
				continue
			}
			p := replyPlan("/" + desc.ServiceName + "/" + m.MethodName)
			got := write
			switch {
			case p.ReadOnly && p.UpFront == 0:
				got = read
			case !p.ReadOnly && p.UpFront == api.MaxReplyBytes:
				got = batch
			case p.ReadOnly || p.UpFront != 0:
				got = "unexpected"
			}
			if got != kind {
				t.Errorf("%s/%s is planned as %s (%+v), want %s", desc.ServiceName, m.MethodName, got, p, kind)
			}
		}
	}
}
