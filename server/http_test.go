package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/dedupd/dedupd/internal/clip"
	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// claimAnswer is the JSON of a ClaimResponse, as a caller without
// generated code reads it.
type claimAnswer struct {
	Outcome      string `json:"outcome"`
	FencingToken string `json:"fencingToken"` // int64 is a string in protojson
	Record       struct {
		Key    string `json:"key"`
		State  string `json:"state"`
		Result string `json:"result"` // bytes are base64
	} `json:"record"`
}

// TestHTTPClaimCompleteReplay: the README's exchange over plain JSON, in
// both forms of a unary Connect call (with and without
// Connect-Protocol-Version): a claim acquires, Complete stores the result,
// the next claim replays it byte for byte, and a claim with another digest
// is refused DIGEST_MISMATCH, HTTP 400, with the stored record as a
// detail. The gRPC client then reads the very record HTTP wrote.
func TestHTTPClaimCompleteReplay(t *testing.T) {
	result := []byte{0, 1, 2, 0xff, '"', '\\'} // bytes JSON cannot hold raw
	for _, header := range []bool{false, true} {
		t.Run(fmt.Sprintf("Connect-Protocol-Version=%v", header), func(t *testing.T) {
			grpcAddr, base := runHTTPServer(t, testConfig())
			claim := `{"consumer":"payments","key":"charge-42","digest":"q83vEjQ=","lease_ttl":"30s"}`
			var first claimAnswer
			postJSON(t, base, "/dedup.v1.DedupService/Claim", "", claim, header).ok(t, &first)
			if first.Outcome != "OUTCOME_ACQUIRED" || first.FencingToken != "1" || first.Record.State != "STATE_PENDING" {
				t.Fatalf("first claim: %+v", first)
			}
			complete := fmt.Sprintf(`{"consumer":"payments","key":"charge-42","fencingToken":%s,"result":%q}`,
				first.FencingToken, base64.StdEncoding.EncodeToString(result))
			var done struct{ Record struct{ State string } }
			postJSON(t, base, "/dedup.v1.DedupService/Complete", "", complete, header).ok(t, &done)
			if done.Record.State != "STATE_COMPLETED" {
				t.Fatalf("complete: %+v", done)
			}
			var replay claimAnswer
			postJSON(t, base, "/dedup.v1.DedupService/Claim", "", claim, header).ok(t, &replay)
			got, err := base64.StdEncoding.DecodeString(replay.Record.Result)
			if err != nil || replay.Outcome != "OUTCOME_COMPLETED" || !bytes.Equal(got, result) {
				t.Fatalf("replay: %+v (result %x, %v), want COMPLETED with %x", replay, got, err, result)
			}
			other := strings.Replace(claim, "q83vEjQ=", "3q2+7w==", 1)
			a := postJSON(t, base, "/dedup.v1.DedupService/Claim", "", other, header)
			e := a.connectErr(t)
			if a.status != http.StatusBadRequest || e.Code != "failed_precondition" || e.reason() != "DIGEST_MISMATCH" {
				t.Fatalf("other digest: HTTP %d %+v", a.status, e)
			}
			if !hasDetail(e, "dedup.v1.Record") {
				t.Errorf("DIGEST_MISMATCH without the stored record: %s", a.body)
			}
			rec, err := dedupv1.NewDedupServiceClient(dialServer(t, grpcAddr)).Lookup(context.Background(),
				&dedupv1.LookupRequest{Consumer: "payments", Key: "charge-42"})
			if err != nil || !bytes.Equal(rec.GetRecord().GetResult(), result) {
				t.Fatalf("gRPC Lookup of what HTTP stored: %v, %v", rec, err)
			}
		})
	}
}

func hasDetail(e connectError, typ string) bool {
	for _, d := range e.Details {
		if d.Type == typ {
			return true
		}
	}
	return false
}

// TestHTTPAuthAndErrors: the same tokens as gRPC (health needing none),
// each refusal and each handler error with its code, its HTTP status from Connect's table and
// its ErrorInfo reason; the message never names the store and is cut as
// every message is.
func TestHTTPAuthAndErrors(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	_, base := runHTTPServer(t, cfg)
	lookup := `{"consumer":"inventory","key":"nope"}`
	cases := []struct {
		name, path, token, body string
		status                  int
		code, reason            string
	}{
		{"no token", "/dedup.v1.DedupService/Lookup", "", lookup, 401, "unauthenticated", "UNAUTHENTICATED"},
		{"unknown token", "/dedup.v1.DedupService/Lookup", "tok-unknown-0123456789", lookup, 401, "unauthenticated", "UNAUTHENTICATED"},
		{"another consumer's token", "/dedup.v1.DedupService/Lookup", inventoryToken,
			`{"consumer":"payments","key":"nope"}`, 403, "permission_denied", "PERMISSION_DENIED"},
		{"a consumer token on AdminService", "/dedup.v1.AdminService/Stats", allToken, `{}`, 403, "permission_denied", "PERMISSION_DENIED"},
		{"unknown key", "/dedup.v1.DedupService/Lookup", inventoryToken, lookup, 404, "not_found", "RECORD_NOT_FOUND"},
		{"no key", "/dedup.v1.DedupService/Claim", inventoryToken, `{"consumer":"inventory"}`, 400, "invalid_argument", "INVALID_FIELD"},
		{"JSON that does not decode", "/dedup.v1.DedupService/Claim", inventoryToken, `{"consumer":"inventory","key":`,
			400, "invalid_argument", "MALFORMED_REQUEST"},
		{"JSON that does not decode, after a long value", "/dedup.v1.DedupService/Claim", inventoryToken,
			`{"consumer":"inventory","key":"` + strings.Repeat("k", 100<<10) + `","leaseTtl":5}`, 400, "invalid_argument", "MALFORMED_REQUEST"},
		{"complete without a lease", "/dedup.v1.DedupService/Complete", inventoryToken,
			`{"consumer":"inventory","key":"nope","fencingToken":"7"}`, 409, "aborted", "LEASE_LOST"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := postJSON(t, base, tc.path, tc.token, tc.body, false)
			e := a.connectErr(t)
			if a.status != tc.status || e.Code != tc.code || e.reason() != tc.reason {
				t.Fatalf("HTTP %d %s %s, want %d %s %s: %s", a.status, e.Code, e.reason(), tc.status, tc.code, tc.reason, a.body)
			}
			if strings.Contains(strings.ToLower(e.Message), "sqlite") {
				t.Errorf("the message names the store: %q", e.Message)
			}
			if len(e.Message) > clip.MaxEchoed+len(clip.Marker) {
				t.Errorf("the message echoes %d bytes", len(e.Message))
			}
		})
	}
	var ok struct{ Outcome string }
	postJSON(t, base, "/dedup.v1.DedupService/Claim", inventoryToken, `{"consumer":"inventory","key":"k"}`, false).ok(t, &ok)
	if ok.Outcome != "OUTCOME_ACQUIRED" {
		t.Fatalf("a claim with its consumer's token: %+v", ok)
	}
	var health struct{ Status string }
	postJSON(t, base, "/grpc.health.v1.Health/Check", "", `{}`, false).ok(t, &health)
	if health.Status != "SERVING" {
		t.Fatalf("a health check without a token: %+v", health)
	}
}

// TestHTTPServerStreamAndGRPCWeb: AdminService.Purge, a server stream,
// over the Connect streaming protocol (connect-go's client, JSON), and a
// unary call over gRPC-Web (binary protobuf), each checked against what
// the store holds afterwards, read over gRPC.
func TestHTTPServerStreamAndGRPCWeb(t *testing.T) {
	grpcAddr, base := runHTTPServer(t, testConfig())
	claim := connect.NewClient[dedupv1.ClaimRequest, dedupv1.ClaimResponse](http.DefaultClient,
		base+"/dedup.v1.DedupService/Claim", connect.WithGRPCWeb())
	const n = 25
	for i := range n {
		resp, err := claim.CallUnary(context.Background(), connect.NewRequest(&dedupv1.ClaimRequest{Consumer: "purged", Key: fmt.Sprint("k", i)}))
		if err != nil || resp.Msg.GetOutcome() != dedupv1.Outcome_OUTCOME_ACQUIRED {
			t.Fatalf("gRPC-Web claim %d: %v, %v", i, resp, err)
		}
	}
	_, err := claim.CallUnary(context.Background(), connect.NewRequest(&dedupv1.ClaimRequest{Consumer: "purged"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("gRPC-Web claim without a key: %v, want invalid_argument", err)
	}

	purge := connect.NewClient[dedupv1.PurgeRequest, dedupv1.PurgeResponse](http.DefaultClient,
		base+"/dedup.v1.AdminService/Purge", connect.WithProtoJSON())
	stream, err := purge.CallServerStream(context.Background(), connect.NewRequest(&dedupv1.PurgeRequest{Consumer: "purged", BatchSize: 10}))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*dedupv1.PurgeResponse
	for stream.Receive() {
		msgs = append(msgs, stream.Msg())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	// 25 records in batches of 10: progress after 10 and 20, then done.
	if len(msgs) < 2 || !msgs[len(msgs)-1].GetDone() || msgs[len(msgs)-1].GetDeleted() != n {
		t.Fatalf("purge stream: %v, want progress then done with %d deleted", msgs, n)
	}
	list, err := dedupv1.NewDedupServiceClient(dialServer(t, grpcAddr)).ListRecords(context.Background(),
		&dedupv1.ListRecordsRequest{Consumer: "purged"})
	if err != nil || len(list.GetRecords()) != 0 {
		t.Fatalf("after the purge: %v, %v", list, err)
	}
}

// TestHTTPUnknownRoute: a path that names no method, a GET, and a body
// without a JSON or protobuf Content-Type (curl -d without -H) each get a
// Connect error, 404, saying how a method is called, and reach no handler.
func TestHTTPUnknownRoute(t *testing.T) {
	_, base := runHTTPServer(t, testConfig())
	cases := []struct{ name, method, path, contentType string }{
		{"no such method", http.MethodPost, "/dedup.v1.DedupService/Nope", "application/json"},
		{"no such service", http.MethodPost, "/dedup.v1.Nope/Claim", "application/json"},
		{"GET", http.MethodGet, "/dedup.v1.DedupService/Claim", ""},
		{"form body", http.MethodPost, "/dedup.v1.DedupService/Claim", "application/x-www-form-urlencoded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, base+tc.path, strings.NewReader(`{"consumer":"c","key":"k"}`))
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			a := do(t, req)
			e := a.connectErr(t)
			if a.status != http.StatusNotFound || e.Code != "not_found" || !strings.Contains(e.Message, "Content-Type: application/json") {
				t.Fatalf("HTTP %d %+v", a.status, e)
			}
		})
	}
	a := postJSON(t, base, "/dedup.v1.DedupService/Lookup", "", `{"consumer":"c","key":"k"}`, false)
	if e := a.connectErr(t); e.reason() != "RECORD_NOT_FOUND" {
		t.Fatalf("the form post reached a handler: Lookup answers %+v", e)
	}
}
