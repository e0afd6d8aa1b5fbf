package server

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/dedupd/dedupd/server/rpcerrors"
)

// withMember adds the member name: value to the JSON object body.
func withMember(t *testing.T, body []byte, name, value string) []byte {
	t.Helper()
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) < 2 || trimmed[0] != '{' {
		t.Fatalf("%q is not a JSON object", body)
	}
	member := strconv.Quote(name) + ":" + value
	if string(trimmed) == "{}" {
		return []byte("{" + member + "}")
	}
	return append([]byte("{"+member+","), trimmed[1:]...)
}

// TestUnknownJSONFieldIsRefusedOnEveryMethod posts, to every method of
// every dedup.v1 service (read from the descriptors), its sample request
// with one member its message does not define, "digset" (Claim's digest,
// misspelled), over Connect unary (with and without the protocol header),
// the Connect streaming protocol for server streams, and gRPC-Web JSON.
// Every one is INVALID_ARGUMENT with reason INVALID_FIELD naming the
// member; the same request without it is answered without naming it (the
// oracle that the member alone is refused).
func TestUnknownJSONFieldIsRefusedOnEveryMethod(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	_, base := runHTTPServer(t, cfg)
	var checked []string
	for _, m := range apiMethods(t) {
		t.Run(string(m.Parent().Name())+"/"+string(m.Name()), func(t *testing.T) {
			plain, err := protojson.Marshal(sample(m))
			if err != nil {
				t.Fatal(err)
			}
			body := withMember(t, plain, "digset", `"q83vEjQ="`)
			if _, info := callGRPCWebJSON(t, base, m, plain); info.GetMetadata()["field"] == "digset" {
				t.Fatalf("the sample request alone is refused naming digset: %v", info)
			}
			if m.IsStreamingServer() {
				got := callConnectStream(t, base, m, body)
				if got.code != codes.InvalidArgument || got.reason != rpcerrors.ReasonInvalidField {
					t.Errorf("Connect stream with digset: %v %s, want INVALID_ARGUMENT INVALID_FIELD", got.code, got.reason)
				}
			} else {
				for _, header := range []bool{false, true} {
					a := postJSON(t, base, rpcPathOf(m), tokenFor(m), string(body), header)
					e := a.connectErr(t)
					if a.status != http.StatusBadRequest || e.reason() != rpcerrors.ReasonInvalidField || fieldOf(e) != "digset" {
						t.Errorf("Connect unary (header %v) with digset: HTTP %d, %s, field %q; want 400 INVALID_FIELD naming digset: %s",
							header, a.status, e.reason(), fieldOf(e), a.body)
					}
				}
			}
			if code, info := callGRPCWebJSON(t, base, m, body); code != codes.InvalidArgument ||
				info.GetReason() != rpcerrors.ReasonInvalidField || info.GetMetadata()["field"] != "digset" {
				t.Errorf("gRPC-Web JSON with digset: %v %v, want INVALID_ARGUMENT INVALID_FIELD naming digset", code, info)
			}
			checked = append(checked, string(m.FullName()))
		})
	}
	t.Logf("unknown field refused on %d RPCs: %s", len(checked), strings.Join(checked, " "))
}

// A misspelled member inside a list of messages is named by its path.
func TestUnknownJSONFieldIsNamedByItsPath(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	_, base := runHTTPServer(t, cfg)
	body := `{"consumer":"every-method","items":[{"key":"a"},{"key":"b","lease_tll":"5s"}]}`
	a := postJSON(t, base, "/dedup.v1.DedupService/ClaimBatch", allToken, body, false)
	if e := a.connectErr(t); e.reason() != rpcerrors.ReasonInvalidField || fieldOf(e) != "items[1].lease_tll" {
		t.Errorf("ClaimBatch with items[1].lease_tll: %s, field %q; want INVALID_FIELD naming items[1].lease_tll", e.reason(), fieldOf(e))
	}
}

// Protobuf binary keeps proto3's rules: a field number the message does
// not define is skipped, not refused (generated code cannot misspell a
// field, and an older server must accept a newer client's fields).
func TestUnknownBinaryFieldIsKept(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	_, base := runHTTPServer(t, cfg)
	m := apiMethod(t, "dedup.v1.DedupService.Claim")
	req := sample(m)
	req.Set(m.Input().Fields().ByName("key"), protoreflect.ValueOfString("binary-unknown"))
	raw, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	raw = protowire.AppendVarint(protowire.AppendTag(raw, 9999, protowire.VarintType), 1)
	httpReq, err := http.NewRequest(http.MethodPost, base+rpcPathOf(m), bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	httpReq.Header.Set("Content-Type", "application/proto")
	httpReq.Header.Set("Authorization", "Bearer "+allToken)
	if a := do(t, httpReq); a.status != http.StatusOK {
		t.Errorf("binary Claim with field 9999: HTTP %d, want 200: %s", a.status, a.body)
	}
}

func apiMethod(t *testing.T, name protoreflect.FullName) protoreflect.MethodDescriptor {
	t.Helper()
	for _, m := range apiMethods(t) {
		if m.FullName() == name {
			return m
		}
	}
	t.Fatalf("no method %s", name)
	return nil
}

// fieldOf is the "field" metadata of a Connect error's ErrorInfo.
func fieldOf(e connectError) string {
	for _, d := range e.Details {
		if d.Type == "google.rpc.ErrorInfo" {
			return d.Debug.Metadata["field"]
		}
	}
	return ""
}

// callGRPCWebJSON calls m in gRPC-Web with JSON and returns the status of
// its trailers and their ErrorInfo (grpc-status-details-bin).
func callGRPCWebJSON(t *testing.T, base string, m protoreflect.MethodDescriptor, body []byte) (codes.Code, *errdetails.ErrorInfo) {
	t.Helper()
	req := envelopedRequest(t, base, m, body)
	req.Header.Set("Content-Type", "application/grpc-web+json")
	a := do(t, req)
	trailers := map[string]string{}
	for k, v := range a.header {
		trailers[strings.ToLower(k)] = v[0]
	}
	for rest := a.body; len(rest) >= 5; {
		flags, n := rest[0], binary.BigEndian.Uint32(rest[1:5])
		frame := rest[5 : 5+n]
		rest = rest[5+n:]
		if flags&0x80 != 0 {
			for line := range strings.SplitSeq(string(frame), "\r\n") {
				if k, v, ok := strings.Cut(line, ":"); ok {
					trailers[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
				}
			}
		}
	}
	code, err := strconv.Atoi(trailers["grpc-status"])
	if err != nil {
		t.Fatalf("gRPC-Web answer without grpc-status: HTTP %d %q", a.status, a.body)
	}
	raw, err := base64.RawStdEncoding.DecodeString(strings.TrimRight(trailers["grpc-status-details-bin"], "="))
	var st spb.Status
	if err != nil || proto.Unmarshal(raw, &st) != nil {
		return codes.Code(code), nil
	}
	for _, d := range st.GetDetails() {
		var info errdetails.ErrorInfo
		if d.UnmarshalTo(&info) == nil {
			return codes.Code(code), &info
		}
	}
	return codes.Code(code), nil
}
