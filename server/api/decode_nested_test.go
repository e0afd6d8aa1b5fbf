package api

import (
	"bytes"
	"context"
	"testing"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// marked stands where the invalid string goes in a well-formed request,
// so that proto.Marshal builds the rest of the wire; badUTF8, as long, then
// replaces it in place (no length prefix changes).
const (
	marked  = "<MARK>"
	badUTF8 = "k\xff\xfek\xc3("
)

// wireWith marshals m with the invalid string where marked is.
func wireWith(t *testing.T, m proto.Message) []byte {
	t.Helper()
	wire, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(wire, []byte(marked)) != 1 || len(marked) != len(badUTF8) {
		t.Fatal("the request must hold marked once")
	}
	return bytes.Replace(wire, []byte(marked), []byte(badUTF8), 1)
}

// TestNestedInvalidUTF8NamesTheField: a string that is not UTF-8 inside a
// nested message is INVALID_FIELD naming its path; inside a batch item it
// fails only that item, and the others are served.
func TestNestedInvalidUTF8NamesTheField(t *testing.T) {
	conn := newConn(t)
	ctx := context.Background()
	c := dedupv1.NewDedupServiceClient(conn)
	for _, k := range []string{"a", "b"} {
		got, err := c.Claim(ctx, &dedupv1.ClaimRequest{Consumer: "orders", Key: k})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Complete(ctx, &dedupv1.CompleteRequest{Consumer: "orders", Key: k, FencingToken: got.GetFencingToken()}); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("whole call", func(t *testing.T) {
		for _, tc := range []struct {
			name, method string
			req          proto.Message
			field        string
		}{
			{"policy.consumer", "/dedup.v1.AdminService/SetPolicy",
				&dedupv1.SetPolicyRequest{Policy: &dedupv1.Policy{Consumer: marked}}, "policy.consumer"},
			{"a batch's consumer", "/dedup.v1.DedupService/ClaimBatch",
				&dedupv1.ClaimBatchRequest{Consumer: marked, Items: []*dedupv1.ClaimBatchItem{{Key: "k"}}}, "consumer"},
			{"a lookup's consumer", "/dedup.v1.DedupService/Lookup",
				&dedupv1.LookupRequest{Consumer: marked, Key: "k"}, "consumer"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var reply []byte
				err := conn.Invoke(ctx, tc.method, wireWith(t, tc.req), &reply, grpc.ForceCodec(wireCodec{}))
				st := status.Convert(err)
				if info := errorInfo(t, st); st.Code() != codes.InvalidArgument ||
					info.GetReason() != rpcerrors.ReasonInvalidField || info.GetMetadata()["field"] != tc.field {
					t.Fatalf("got %v %v, want INVALID_FIELD naming %q", st.Code(), info, tc.field)
				}
			})
		}
	})

	t.Run("one item", func(t *testing.T) {
		done := &dedupv1.FinishBatchItem_Result{Result: []byte("r")}
		for _, tc := range []struct {
			name, method string
			req          proto.Message
			field        string
		}{
			{"ClaimBatch items[1].key", "ClaimBatch", &dedupv1.ClaimBatchRequest{Consumer: "orders",
				Items: []*dedupv1.ClaimBatchItem{{Key: "a"}, {Key: marked}, {Key: "b"}}}, "items[1].key"},
			{"ClaimBatch items[1].owner", "ClaimBatch", &dedupv1.ClaimBatchRequest{Consumer: "orders",
				Items: []*dedupv1.ClaimBatchItem{{Key: "a"}, {Key: "x", Owner: marked}, {Key: "b"}}}, "items[1].owner"},
			{"FinishBatch items[1].rejection.reason", "FinishBatch", &dedupv1.FinishBatchRequest{Consumer: "orders",
				Items: []*dedupv1.FinishBatchItem{{Key: "a", FencingToken: 1, Outcome: done}, {Key: "x", FencingToken: 1,
					Outcome: &dedupv1.FinishBatchItem_Rejection{Rejection: &dedupv1.Rejection{Reason: marked}}}, {Key: "b", FencingToken: 1, Outcome: done}}},
				"items[1].rejection.reason"},
			{"FinishBatch items[1].rejection.message", "FinishBatch", &dedupv1.FinishBatchRequest{Consumer: "orders",
				Items: []*dedupv1.FinishBatchItem{{Key: "a", FencingToken: 1, Outcome: done}, {Key: "x", FencingToken: 1,
					Outcome: &dedupv1.FinishBatchItem_Rejection{Rejection: &dedupv1.Rejection{Reason: "R", Message: marked}}}, {Key: "b", FencingToken: 1, Outcome: done}}},
				"items[1].rejection.message"},
			{"ExtendLeaseBatch items[1].key", "ExtendLeaseBatch", &dedupv1.ExtendLeaseBatchRequest{Consumer: "orders",
				Items: []*dedupv1.ExtendLeaseBatchItem{{Key: "a", FencingToken: 1}, {Key: marked, FencingToken: 1}, {Key: "b", FencingToken: 1}}},
				"items[1].key"},
			{"LookupBatch keys[1]", "LookupBatch", &dedupv1.LookupBatchRequest{Consumer: "orders", Keys: []string{"a", marked, "b"}}, "keys[1]"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var wire []byte
				err := conn.Invoke(ctx, "/dedup.v1.DedupService/"+tc.method, wireWith(t, tc.req), &wire, grpc.ForceCodec(wireCodec{}))
				if err != nil {
					t.Fatalf("a batch with one bad item failed whole: %v", err)
				}
				errs := itemErrors(t, tc.method, wire)
				if len(errs) != 3 {
					t.Fatalf("%d results for 3 items", len(errs))
				}
				bad := status.FromProto(errs[1])
				if info := errorInfo(t, bad); bad.Code() != codes.InvalidArgument || info.GetReason() != rpcerrors.ReasonInvalidField ||
					info.GetMetadata()["field"] != tc.field {
					t.Fatalf("the bad item got %v %v, want INVALID_FIELD naming %q", bad.Code(), info, tc.field)
				}
				for _, i := range []int{0, 2} { // served as their lone calls would be: never INVALID_FIELD
					if st := status.FromProto(errs[i]); st.Code() == codes.InvalidArgument {
						t.Fatalf("item %d, which is valid, got %v", i, st.Err())
					}
				}
			})
		}
	})
}

// itemErrors decodes a batch reply and returns each item's error (nil for
// an item answered without one).
func itemErrors(t *testing.T, method string, wire []byte) []*spb.Status {
	t.Helper()
	var out []*spb.Status
	if method == "ClaimBatch" {
		var r dedupv1.ClaimBatchResponse
		mustUnmarshal(t, wire, &r)
		for _, res := range r.GetResults() {
			out = append(out, res.GetError())
		}
		return out
	}
	var r dedupv1.LookupBatchResponse // the wire form of every other batch reply
	mustUnmarshal(t, wire, &r)
	for _, res := range r.GetResults() {
		out = append(out, res.GetError())
	}
	return out
}

func mustUnmarshal(t *testing.T, wire []byte, m proto.Message) {
	t.Helper()
	if err := proto.Unmarshal(wire, m); err != nil {
		t.Fatal(err)
	}
}
