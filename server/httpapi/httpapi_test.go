package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDefaultConnect: which requests get Connect-Protocol-Version: 1
// added, each decided by hand from the Connect specification (a unary
// call is a POST of application/json or application/proto to
// /package.Service/Method) and from what is already there (a header sent
// is never changed; other protocols and REST paths are left alone).
func TestDefaultConnect(t *testing.T) {
	cases := []struct {
		name, method, path string
		contentType        []string
		sent, want         string // the header as sent, and as the transcoder sees it
		wantType           string // the Content-Type the transcoder sees, when marked
	}{
		{"curl JSON", "POST", "/dedup.v1.DedupService/Claim", []string{"application/json"}, "", "1", "application/json"},
		{"JSON with charset", "POST", "/dedup.v1.DedupService/Claim", []string{"application/json; charset=utf-8"}, "", "1", "application/json"},
		{"JSON, upper case", "POST", "/dedup.v1.DedupService/Claim", []string{"Application/JSON; Charset=UTF-8"}, "", "1", "application/json"},
		{"binary protobuf", "POST", "/dedup.v1.DedupService/Claim", []string{"application/proto"}, "", "1", "application/proto"},
		{"header already sent", "POST", "/dedup.v1.DedupService/Claim", []string{"application/json"}, "1", "1", "application/json"},
		{"another version sent", "POST", "/dedup.v1.DedupService/Claim", []string{"application/json"}, "2", "2", ""},
		{"JSON in another charset", "POST", "/dedup.v1.DedupService/Claim", []string{"application/json; charset=latin1"}, "", "", ""},
		{"two content types", "POST", "/dedup.v1.DedupService/Claim", []string{"application/json", "application/json"}, "", "", ""},
		{"form", "POST", "/dedup.v1.DedupService/Claim", []string{"application/x-www-form-urlencoded"}, "", "", ""},
		{"Connect stream", "POST", "/dedup.v1.AdminService/Purge", []string{"application/connect+json"}, "", "", ""},
		{"gRPC-Web", "POST", "/dedup.v1.DedupService/Claim", []string{"application/grpc-web+proto"}, "", "", ""},
		{"GET", "GET", "/dedup.v1.DedupService/Claim", []string{"application/json"}, "", "", ""},
		{"REST path", "POST", "/v1/records/k", []string{"application/json"}, "", "", ""},
		{"no package", "POST", "/DedupService/Claim", []string{"application/json"}, "", "", ""},
		{"no method", "POST", "/dedup.v1.DedupService/", []string{"application/json"}, "", "", ""},
		{"deeper path", "POST", "/dedup.v1.DedupService/Claim/x", []string{"application/json"}, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var gotType string
			h := DefaultConnect(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				got, gotType = r.Header.Values("Connect-Protocol-Version"), r.Header.Get("Content-Type")
			}))
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader("{}"))
			req.Header["Content-Type"] = tc.contentType
			if tc.sent != "" {
				req.Header.Set("Connect-Protocol-Version", tc.sent)
			}
			h.ServeHTTP(httptest.NewRecorder(), req)
			var want []string
			if tc.want != "" {
				want = []string{tc.want}
			}
			if len(got) != len(want) || len(got) == 1 && got[0] != want[0] {
				t.Fatalf("Connect-Protocol-Version %q, want %q", got, want)
			}
			if tc.wantType != "" && gotType != tc.wantType {
				t.Fatalf("Content-Type %q, want %q", gotType, tc.wantType)
			}
		})
	}
}

// TestEmptyJSONBodyRefused: an empty JSON body, which the transcoder would
// pass on as no message at all, is refused INVALID_ARGUMENT /
// MALFORMED_REQUEST, HTTP 400, in the Connect error JSON, with or without
// Connect-Protocol-Version; an empty protobuf body is the empty message
// and goes through.
func TestEmptyJSONBodyRefused(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, version string
		refused                    bool
	}{
		{"curl JSON", "application/json", "", true},
		{"Connect JSON", "application/json", "1", true},
		{"protobuf", "application/proto", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reached := false
			h := DefaultConnect(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
			req := httptest.NewRequest(http.MethodPost, "/dedup.v1.AdminService/Stats", http.NoBody)
			req.Header.Set("Content-Type", tc.contentType)
			if tc.version != "" {
				req.Header.Set("Connect-Protocol-Version", tc.version)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if reached == tc.refused {
				t.Fatalf("reached the transcoder: %v, want %v", reached, !tc.refused)
			}
			if !tc.refused {
				return
			}
			var e struct {
				Code    string
				Details []struct{ Debug struct{ Reason string } }
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || rec.Code != http.StatusBadRequest ||
				e.Code != "invalid_argument" || len(e.Details) != 1 || e.Details[0].Debug.Reason != "MALFORMED_REQUEST" {
				t.Fatalf("HTTP %d %s (%v)", rec.Code, rec.Body, err)
			}
		})
	}
}
