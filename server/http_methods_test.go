package server

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"
)

// connectHTTPStatus is the Connect protocol's table of HTTP statuses for
// error codes (connectrpc.com/docs/protocol, "Error Codes").
var connectHTTPStatus = map[codes.Code]int{
	codes.Canceled: 499, codes.Unknown: 500, codes.InvalidArgument: 400, codes.DeadlineExceeded: 504,
	codes.NotFound: 404, codes.AlreadyExists: 409, codes.PermissionDenied: 403, codes.ResourceExhausted: 429,
	codes.FailedPrecondition: 400, codes.Aborted: 409, codes.OutOfRange: 400, codes.Unimplemented: 501,
	codes.Internal: 500, codes.Unavailable: 503, codes.DataLoss: 500, codes.Unauthenticated: 401,
}

// apiMethods are every method of every dedup.v1 service, read from the
// descriptors compiled into this binary: an RPC added to the protos is
// here without anyone listing it.
func apiMethods(t *testing.T) []protoreflect.MethodDescriptor {
	t.Helper()
	var methods []protoreflect.MethodDescriptor
	protoregistry.GlobalFiles.RangeFilesByPackage("dedup.v1", func(f protoreflect.FileDescriptor) bool {
		for i := range f.Services().Len() {
			svc := f.Services().Get(i)
			for j := range svc.Methods().Len() {
				methods = append(methods, svc.Methods().Get(j))
			}
		}
		return true
	})
	names := map[protoreflect.FullName]bool{}
	for _, m := range methods {
		names[m.FullName()] = true
	}
	for _, known := range []protoreflect.FullName{"dedup.v1.DedupService.Claim", "dedup.v1.AdminService.Purge",
		"dedup.v1.StreamService.ClaimStream", "dedup.v1.StreamAdminService.ResetStream"} {
		if !names[known] {
			t.Fatalf("the descriptors hold no %s: the enumeration is broken", known)
		}
	}
	return methods
}

// sample is a request for m naming a consumer (when the request has that
// field): enough to pass auth and reach the handler, which then answers
// from its own validation or its store.
func sample(m protoreflect.MethodDescriptor) *dynamicpb.Message {
	req := dynamicpb.NewMessage(m.Input())
	if f := m.Input().Fields().ByName("consumer"); f != nil && f.Kind() == protoreflect.StringKind {
		req.Set(f, protoreflect.ValueOfString("every-method"))
	}
	return req
}

// rpcPathOf is the method's path, /package.Service/Method.
func rpcPathOf(m protoreflect.MethodDescriptor) string {
	return "/" + string(m.Parent().FullName()) + "/" + string(m.Name())
}

// tokenFor is a token that may call m: admin services take the admin
// grant, the others a grant for every consumer.
func tokenFor(m protoreflect.MethodDescriptor) string {
	switch m.Parent().FullName() {
	case "dedup.v1.AdminService", "dedup.v1.StreamAdminService":
		return adminToken
	}
	return allToken
}

// TestHTTPServesEveryMethod calls every method of every dedup.v1 service
// over HTTP, and the same request over gRPC, which is the oracle: the
// HTTP caller must get the same answer, a message of the method's reply
// type or an error with the same code and ErrorInfo, with its HTTP status
// from Connect's table. Unary methods are posted as curl posts them
// (no Connect-Protocol-Version) and as Connect clients do (with it); server
// streams use the Connect streaming protocol. A method that the HTTP side
// does not route answers 404 or 415 without an ErrorInfo, and fails.
func TestHTTPServesEveryMethod(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	grpcAddr, base := runHTTPServer(t, cfg)
	conn := dialServer(t, grpcAddr)
	for _, m := range apiMethods(t) {
		t.Run(string(m.Parent().Name())+"/"+string(m.Name()), func(t *testing.T) {
			req := sample(m)
			body, err := protojson.Marshal(req)
			if err != nil {
				t.Fatal(err)
			}
			want := callGRPC(t, conn, m, req)
			if m.IsStreamingServer() {
				checkSame(t, m, want, callConnectStream(t, base, m, body))
				return
			}
			for _, header := range []bool{false, true} {
				got := postJSON(t, base, rpcPathOf(m), tokenFor(m), string(body), header)
				checkSame(t, m, want, unaryOutcome(t, m, got))
			}
		})
	}
}

// outcome is what one call answered: its messages, or its error's code
// and ErrorInfo reason.
type outcome struct {
	messages int
	code     codes.Code
	reason   string
}

func callGRPC(t *testing.T, conn *grpc.ClientConn, m protoreflect.MethodDescriptor, req proto.Message) outcome {
	t.Helper()
	ctx := withToken(tokenFor(m))
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: m.IsStreamingServer()}, rpcPathOf(m))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SendMsg(req); err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	if err := s.CloseSend(); err != nil {
		t.Fatal(err)
	}
	var o outcome
	for {
		err := s.RecvMsg(dynamicpb.NewMessage(m.Output()))
		if errors.Is(err, io.EOF) {
			return o
		}
		if err != nil {
			st := status.Convert(err)
			o.code, o.reason = st.Code(), grpcReason(st)
			return o
		}
		o.messages++
	}
}

func grpcReason(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.GetReason()
		}
	}
	return ""
}

// unaryOutcome reads a Connect unary answer: a 200 must decode, strictly,
// as the method's reply; anything else must be a Connect error whose HTTP
// status is its code's.
func unaryOutcome(t *testing.T, m protoreflect.MethodDescriptor, a httpAnswer) outcome {
	t.Helper()
	if a.status == http.StatusOK {
		if err := protojson.Unmarshal(a.body, dynamicpb.NewMessage(m.Output())); err != nil {
			t.Fatalf("200 with %q, not a %s: %v", a.body, m.Output().FullName(), err)
		}
		return outcome{messages: 1}
	}
	e := a.connectErr(t)
	code := codeOf(t, e.Code)
	if a.status != connectHTTPStatus[code] {
		t.Errorf("HTTP %d for %s, want %d", a.status, e.Code, connectHTTPStatus[code])
	}
	return outcome{code: code, reason: e.reason()}
}

// codeOf is the code a Connect error names ("invalid_argument").
func codeOf(t *testing.T, name string) codes.Code {
	t.Helper()
	var c connect.Code
	if err := c.UnmarshalText([]byte(name)); err != nil {
		t.Fatalf("Connect error code %q: %v", name, err)
	}
	return codes.Code(c)
}

// callConnectStream calls a server-streaming method in the Connect
// streaming protocol with JSON: one enveloped request, enveloped replies,
// and an end-of-stream envelope (flag 2) that carries any error.
func callConnectStream(t *testing.T, base string, m protoreflect.MethodDescriptor, body []byte) outcome {
	t.Helper()
	req := envelopedRequest(t, base, m, body)
	req.Header.Set("Content-Type", "application/connect+json")
	req.Header.Set("Connect-Protocol-Version", "1")
	a := do(t, req)
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d for a Connect stream: %s", a.status, a.body)
	}
	var o outcome
	for rest := a.body; ; {
		if len(rest) < 5 {
			t.Fatalf("stream ended without its end envelope (%d bytes left)", len(rest))
		}
		flags, n := rest[0], binary.BigEndian.Uint32(rest[1:5])
		msg := rest[5 : 5+n]
		rest = rest[5+n:]
		if flags&2 == 0 {
			if err := protojson.Unmarshal(msg, dynamicpb.NewMessage(m.Output())); err != nil {
				t.Fatalf("stream message %q, not a %s: %v", msg, m.Output().FullName(), err)
			}
			o.messages++
			continue
		}
		var end struct{ Error *connectError }
		if err := json.Unmarshal(msg, &end); err != nil {
			t.Fatalf("end of stream %q: %v", msg, err)
		}
		if end.Error != nil {
			o.code, o.reason = codeOf(t, end.Error.Code), end.Error.reason()
		}
		return o
	}
}

// envelopedRequest posts body to m in one envelope (flags 0, then its
// length), as the Connect streaming protocol and gRPC-Web frame a message,
// with m's token.
func envelopedRequest(t *testing.T, base string, m protoreflect.MethodDescriptor, body []byte) *http.Request {
	t.Helper()
	var envelope bytes.Buffer
	envelope.WriteByte(0)
	_ = binary.Write(&envelope, binary.BigEndian, uint32(len(body)))
	envelope.Write(body)
	req, err := http.NewRequest(http.MethodPost, base+rpcPathOf(m), &envelope)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokenFor(m))
	return req
}

func checkSame(t *testing.T, m protoreflect.MethodDescriptor, grpcGot, httpGot outcome) {
	t.Helper()
	if httpGot != grpcGot {
		t.Errorf("%s: over HTTP %+v, over gRPC %+v", m.FullName(), httpGot, grpcGot)
	}
	if grpcGot.code != codes.OK && grpcGot.reason == "" {
		t.Errorf("%s: gRPC answered %v without an ErrorInfo", m.FullName(), grpcGot.code)
	}
}
