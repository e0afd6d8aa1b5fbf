package httpapi

import (
	"net/http"
	"net/http/httptest"
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
			req := httptest.NewRequest(tc.method, tc.path, nil)
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

// TestPercentEncode: the Grpc-Message encoding of a few messages worked out
// by hand from the gRPC over HTTP/2 specification.
func TestPercentEncode(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, 100 calls": "plain text, 100 calls",
		"50% full":              "50%25 full",
		"line\nbreak":           "line%0Abreak",
		"caf\u00e9":             "caf%C3%A9",
		"~ and \x7f":            "~ and %7F",
		"":                      "",
	} {
		if got := percentEncode(in); got != want {
			t.Errorf("percentEncode(%q) = %q, want %q", in, got, want)
		}
	}
}
