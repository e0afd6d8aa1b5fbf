package api

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// wireCodec sends hand-made bytes, as a client in a language that does not
// check UTF-8 (or a broken one) would, and reads the reply as a message.
type wireCodec struct{}

func (wireCodec) Marshal(v any) ([]byte, error) { return v.([]byte), nil }
func (wireCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (wireCodec) Name() string { return "proto" }

func field(b []byte, num protowire.Number, value []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, value)
}

func TestUndecodableRequestsAreInvalidArguments(t *testing.T) {
	conn := newConn(t)
	notUTF8 := []byte{'k', 0xff, 0xfe}
	cutDuration := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1)
	cutDuration = cutDuration[:len(cutDuration)-1]
	cases := []struct {
		name   string
		method string
		wire   []byte
		reason string
		field  string
	}{
		{"key not UTF-8", "Claim", field(field(nil, 1, []byte("orders")), 2, notUTF8), rpcerrors.ReasonInvalidField, "key"},
		{"owner not UTF-8", "Claim", field(field(field(nil, 1, []byte("orders")), 2, []byte("k")), 5, notUTF8), rpcerrors.ReasonInvalidField, "owner"},
		{"consumer not UTF-8 on Lookup", "Lookup", field(nil, 1, notUTF8), rpcerrors.ReasonInvalidField, "consumer"},
		{"reason not UTF-8 on Reject", "Reject", field(field(nil, 1, []byte("orders")), 4, notUTF8), rpcerrors.ReasonInvalidField, "reason"},
		{"lease cut short", "Claim", field(field(field(nil, 1, []byte("orders")), 2, []byte("k")), 4, cutDuration), rpcerrors.ReasonMalformedRequest, ""},
		{"top-level field cut short", "Claim", field(nil, 1, []byte("orders"))[:5], rpcerrors.ReasonMalformedRequest, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var reply []byte
			err := conn.Invoke(context.Background(), "/dedup.v1.DedupService/"+tc.method, tc.wire, &reply, grpc.ForceCodec(wireCodec{}))
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument {
				t.Fatalf("error = %v, want InvalidArgument", err)
			}
			if info := errorInfo(t, st); info.GetReason() != tc.reason || info.GetMetadata()["field"] != tc.field {
				t.Fatalf("ErrorInfo = %v, want reason %s naming %q", info, tc.reason, tc.field)
			}
		})
	}
}

// TestWellFormedRawRequestIsServed: the lenient decoding path serves what
// the generated one did.
func TestWellFormedRawRequestIsServed(t *testing.T) {
	conn := newConn(t)
	var reply []byte
	wire := field(field(nil, 1, []byte("orders")), 2, []byte("raw-key"))
	if err := conn.Invoke(context.Background(), "/dedup.v1.DedupService/Claim", wire, &reply, grpc.ForceCodec(wireCodec{})); err != nil {
		t.Fatal(err)
	}
	got, err := dedupv1.NewDedupServiceClient(conn).Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: "orders", Key: "raw-key"})
	if err != nil || got.GetRecord().GetState() != dedupv1.State_STATE_PENDING {
		t.Fatalf("Lookup after a raw Claim = %v, %v; want the pending record", got, err)
	}
}

// TestAdminRequestsDecodeLeniently: AdminService, its server stream too,
// answers a string that is not UTF-8 as DedupService does.
func TestAdminRequestsDecodeLeniently(t *testing.T) {
	conn := newConn(t)
	notUTF8 := field(nil, 1, []byte{'i', 0xff})
	var reply []byte
	err := conn.Invoke(context.Background(), "/dedup.v1.AdminService/GetPolicy", notUTF8, &reply, grpc.ForceCodec(wireCodec{}))
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "consumer")

	desc := &grpc.StreamDesc{StreamName: "Purge", ServerStreams: true}
	stream, err := conn.NewStream(context.Background(), desc, "/dedup.v1.AdminService/Purge", grpc.ForceCodec(wireCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(notUTF8); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	err = stream.RecvMsg(&reply)
	wantStatus(t, err, codes.InvalidArgument, rpcerrors.ReasonInvalidField, "consumer")
}

// TestBatchItemsFindsEveryBatch: the methods whose requests are batches
// keep their item faults, each with its request's items field, and only
// they; a method the table does not know has none.
func TestBatchItemsFindsEveryBatch(t *testing.T) {
	cases := []struct {
		service, method string
		want            protoreflect.Name
	}{
		{"dedup.v1.DedupService", "ClaimBatch", "items"},
		{"dedup.v1.DedupService", "FinishBatch", "items"},
		{"dedup.v1.DedupService", "ExtendLeaseBatch", "items"},
		{"dedup.v1.DedupService", "LookupBatch", "keys"},
		{"dedup.v1.DedupService", "Claim", ""},
		{"dedup.v1.DedupService", "Complete", ""},
		{"dedup.v1.AdminService", "SetPolicy", ""},
		{"dedup.v1.DedupService", "NoSuchMethod", ""},
		{"no.such.Service", "Claim", ""},
	}
	for _, tc := range cases {
		if got := batchItems(tc.service, tc.method); got != tc.want {
			t.Errorf("batchItems(%s, %s) = %q, want %q", tc.service, tc.method, got, tc.want)
		}
	}
	batches := 0
	for _, desc := range []grpc.ServiceDesc{dedupv1.DedupService_ServiceDesc, dedupv1.AdminService_ServiceDesc,
		dedupv1.StreamService_ServiceDesc, dedupv1.StreamAdminService_ServiceDesc} {
		for _, m := range desc.Methods {
			if batchItems(desc.ServiceName, m.MethodName) != "" {
				batches++
			}
		}
	}
	if batches != 4 {
		t.Errorf("%d registered methods keep item faults, want the 4 batches", batches)
	}
}
