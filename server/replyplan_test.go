package server

import (
	"testing"

	"google.golang.org/grpc"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/api"
	"github.com/dedupd/dedupd/server/replybudget"
	"github.com/dedupd/dedupd/server/rpcmethod"
)

// TestReplyPlanOfEveryMethod: every unary method of every service has the
// plan written here by hand, so a new method is planned on purpose (a
// write taken for a read would be refused after it wrote).
func TestReplyPlanOfEveryMethod(t *testing.T) {
	const batch, read, write = "batch", "read", "write"
	want := map[string]string{
		"SetPolicy": write, "GetPolicy": read, "ListPolicies": read, "DeletePolicy": write,
		"DeleteRecord": write, "Stats": read,
		"Claim": "claim", "Complete": write, "Reject": write, "Lookup": read, "ExtendLease": write,
		"ListRecords": read, "ClaimBatch": batch, "FinishBatch": batch, "ExtendLeaseBatch": batch, "LookupBatch": read,
		"ClaimStream": write, "CompleteStream": write, "RejectStream": write, "ReleaseStream": write,
		"ExtendStreamLease": write, "GetStream": read, "ListStreams": read, "ResetStream": write,
		"SetStreamPolicy": write, "GetStreamPolicy": read, "DeleteStreamPolicy": write,
		"ClaimParked": write, "ListParked": read, "DropParked": write, "SkipGap": write,
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
			case m.MethodName == "Claim" && p.Unchanged != nil:
				got = "claim"
			case p.ReadOnly || p.UpFront != 0:
				got = "unexpected"
			}
			if got != kind {
				t.Errorf("%s/%s is planned as %s (%+v), want %s", desc.ServiceName, m.MethodName, got, p, kind)
			}
		}
	}
}

// TestClaimReplayIsUnchanged: a Claim's reply may be refused after it ran
// only when the claim acquired nothing.
func TestClaimReplayIsUnchanged(t *testing.T) {
	unchanged := replyPlan("/dedup.v1.DedupService/Claim").Unchanged
	for outcome, want := range map[dedupv1.Outcome]bool{
		dedupv1.Outcome_OUTCOME_ACQUIRED:    false,
		dedupv1.Outcome_OUTCOME_IN_PROGRESS: true,
		dedupv1.Outcome_OUTCOME_COMPLETED:   true,
		dedupv1.Outcome_OUTCOME_REJECTED:    true,
	} {
		if got := unchanged(&dedupv1.ClaimResponse{Outcome: outcome}); got != want {
			t.Errorf("a Claim answering %v: unchanged %v, want %v", outcome, got, want)
		}
	}
}

// TestReplyPlanIgnoresNames: the plan comes from a method's facts, never
// its name. A write named like a read (GetAndClaim, a table entry made up
// here) is never refused after it ran; a read named like a write may be;
// a batch named like a read reserves up front.
func TestReplyPlanIgnoresNames(t *testing.T) {
	items := (&dedupv1.LookupBatchRequest{}).ProtoReflect().Descriptor().Fields().ByName("keys")
	for _, tc := range []struct {
		m    rpcmethod.Method
		want replybudget.Plan
	}{
		{rpcmethod.Method{FullName: "/dedup.v1.DedupService/GetAndClaim", Op: "GetAndClaim"}, replybudget.Plan{}},
		{rpcmethod.Method{FullName: "/dedup.v1.DedupService/ListAndPurge", Op: "ListAndPurge", Admin: true}, replybudget.Plan{}},
		{rpcmethod.Method{FullName: "/dedup.v1.DedupService/ClaimNothing", Op: "ClaimNothing", ReadOnly: true}, replybudget.Plan{ReadOnly: true}},
		{rpcmethod.Method{FullName: "/dedup.v1.DedupService/LookupMany", Op: "LookupMany", Items: items}, replybudget.Plan{UpFront: api.MaxReplyBytes}},
	} {
		got := planOf(&tc.m)
		if got.ReadOnly != tc.want.ReadOnly || got.UpFront != tc.want.UpFront || got.Unchanged != nil {
			t.Errorf("%s (%+v): plan %+v, want %+v", tc.m.Op, tc.m, got, tc.want)
		}
	}
}

// TestNoWriteIsRefusedAfterItRan: across the whole table, a method that
// may write (not NO_SIDE_EFFECTS) is never planned as a read, whatever its
// name; only Claim's reply may say it wrote nothing.
func TestNoWriteIsRefusedAfterItRan(t *testing.T) {
	for _, m := range rpcmethod.All() {
		p := replyPlan(m.FullName)
		if !m.ReadOnly && p.ReadOnly {
			t.Errorf("%s writes but is planned as a read", m.FullName)
		}
		if p.Unchanged != nil && m.FullName != "/dedup.v1.DedupService/Claim" {
			t.Errorf("%s: only Claim's reply may say it wrote nothing", m.FullName)
		}
	}
}
