package rpcmethod

import (
	"testing"

	"google.golang.org/grpc"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// fact is the hand-written expectation of one RPC: what it is, by reading
// what it does (docs/api.md), not by reading the protos' options.
type fact struct {
	read, admin, fenced bool
	items               string
}

var (
	write       = fact{}
	read        = fact{read: true}
	fencedWrite = fact{fenced: true}
	adminWrite  = fact{admin: true}
	adminRead   = fact{admin: true, read: true}
)

// want is every RPC of the four services. An RPC added to the protos and
// not here fails TestTableMatchesHandWrittenFacts: decide it here first.
var want = map[string]fact{
	"/dedup.v1.DedupService/Claim":            write,
	"/dedup.v1.DedupService/Complete":         fencedWrite,
	"/dedup.v1.DedupService/Reject":           fencedWrite,
	"/dedup.v1.DedupService/Lookup":           read,
	"/dedup.v1.DedupService/ExtendLease":      fencedWrite,
	"/dedup.v1.DedupService/ListRecords":      read,
	"/dedup.v1.DedupService/ClaimBatch":       {items: "items"},
	"/dedup.v1.DedupService/FinishBatch":      {items: "items", fenced: true},
	"/dedup.v1.DedupService/ExtendLeaseBatch": {items: "items", fenced: true},
	"/dedup.v1.DedupService/LookupBatch":      {items: "keys", read: true},

	"/dedup.v1.AdminService/SetPolicy":    adminWrite,
	"/dedup.v1.AdminService/GetPolicy":    adminRead,
	"/dedup.v1.AdminService/ListPolicies": adminRead,
	"/dedup.v1.AdminService/DeletePolicy": adminWrite,
	"/dedup.v1.AdminService/DeleteRecord": adminWrite,
	"/dedup.v1.AdminService/Purge":        adminWrite,
	"/dedup.v1.AdminService/Stats":        adminRead,

	"/dedup.v1.StreamService/ClaimStream":       write,
	"/dedup.v1.StreamService/CompleteStream":    fencedWrite,
	"/dedup.v1.StreamService/RejectStream":      fencedWrite,
	"/dedup.v1.StreamService/ReleaseStream":     fencedWrite,
	"/dedup.v1.StreamService/ExtendStreamLease": fencedWrite,
	"/dedup.v1.StreamService/GetStream":         read,
	"/dedup.v1.StreamService/ListStreams":       read,
	"/dedup.v1.StreamService/ClaimParked":       write,
	"/dedup.v1.StreamService/ListParked":        read,

	"/dedup.v1.StreamAdminService/ResetStream":        adminWrite,
	"/dedup.v1.StreamAdminService/SetStreamPolicy":    adminWrite,
	"/dedup.v1.StreamAdminService/GetStreamPolicy":    adminRead,
	"/dedup.v1.StreamAdminService/DeleteStreamPolicy": adminWrite,
	"/dedup.v1.StreamAdminService/DropParked":         adminWrite,
	"/dedup.v1.StreamAdminService/SkipGap":            adminWrite,
}

// TestTableMatchesHandWrittenFacts: every RPC the table holds has exactly
// the facts written above, and every RPC above is in the table.
func TestTableMatchesHandWrittenFacts(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		seen[m.FullName] = true
		w, ok := want[m.FullName]
		if !ok {
			t.Errorf("%s is not in this test's list: decide whether it reads, is admin, is a batch, is fenced", m.FullName)
			continue
		}
		got := fact{read: m.ReadOnly, admin: m.Admin, fenced: m.Fenced}
		if m.Items != nil {
			got.items = string(m.Items.Name())
		}
		if got != w {
			t.Errorf("%s: table %+v, want %+v", m.FullName, got, w)
		}
		if got, ok := Of(m.FullName); !ok || got != m {
			t.Errorf("Of(%s) = %v, %v: not the table's entry", m.FullName, got, ok)
		}
		if op := Op(m.FullName); op != m.Op || op != string(m.Desc.Name()) {
			t.Errorf("Op(%s) = %q, table %q, descriptor %q", m.FullName, op, m.Op, m.Desc.Name())
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s is expected but the table does not have it", name)
		}
	}
}

// TestEveryServedMethodIsInTheTable: each method of the four generated
// services, unary or streaming, has a table entry, so no call the server
// serves goes undecided.
func TestEveryServedMethodIsInTheTable(t *testing.T) {
	n := 0
	for _, desc := range []grpc.ServiceDesc{dedupv1.DedupService_ServiceDesc, dedupv1.AdminService_ServiceDesc,
		dedupv1.StreamService_ServiceDesc, dedupv1.StreamAdminService_ServiceDesc} {
		var names []string
		for _, m := range desc.Methods {
			names = append(names, m.MethodName)
		}
		for _, s := range desc.Streams {
			names = append(names, s.StreamName)
		}
		for _, name := range names {
			n++
			if _, ok := Of("/" + desc.ServiceName + "/" + name); !ok {
				t.Errorf("%s/%s is served but not in the table", desc.ServiceName, name)
			}
		}
	}
	if n != len(want) || len(All()) != len(want) {
		t.Errorf("%d methods served, %d in the table, %d expected", n, len(All()), len(want))
	}
}

// TestOutsideTheTable: health checks and reflection are not dedup.v1 RPCs;
// their op is the last element of their name.
func TestOutsideTheTable(t *testing.T) {
	for full, op := range map[string]string{
		"/grpc.health.v1.Health/Check": "Check",
		"/dedup.v1.DedupService/Nope":  "Nope",
		"Bare":                         "Bare",
	} {
		if _, ok := Of(full); ok {
			t.Errorf("Of(%s) found a method", full)
		}
		if got := Op(full); got != op {
			t.Errorf("Op(%s) = %q, want %q", full, got, op)
		}
	}
}

// TestItemCount counts a batch request's items through the table's field,
// and nothing for a request of another type.
func TestItemCount(t *testing.T) {
	claims, _ := Of("/dedup.v1.DedupService/ClaimBatch")
	lookups, _ := Of("/dedup.v1.DedupService/LookupBatch")
	lone, _ := Of("/dedup.v1.DedupService/Claim")
	three := &dedupv1.ClaimBatchRequest{Items: make([]*dedupv1.ClaimBatchItem, 3)}
	for _, tc := range []struct {
		m    *Method
		req  *dedupv1.ClaimBatchRequest
		want int
	}{{claims, three, 3}, {claims, &dedupv1.ClaimBatchRequest{}, 0}, {lookups, three, 0}, {lone, three, 0}} {
		if got := tc.m.ItemCount(tc.req); got != tc.want {
			t.Errorf("%s.ItemCount(%d items) = %d, want %d", tc.m.Op, len(tc.req.GetItems()), got, tc.want)
		}
	}
	if got := lookups.ItemCount(&dedupv1.LookupBatchRequest{Keys: []string{"a", "b"}}); got != 2 {
		t.Errorf("LookupBatch.ItemCount(2 keys) = %d", got)
	}
}
