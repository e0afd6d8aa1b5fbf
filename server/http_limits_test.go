package server

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"strings"
	"testing"

	dedupv1 "github.com/dedupd/dedupd/proto/dedup/v1"
)

// TestHTTPBodyLimits: a body over the HTTP bound (here twice
// --max-message-bytes and a MiB) is refused before it is decoded, whether
// its length is announced or not; a body within it whose message is over
// --max-message-bytes is refused too. Each refusal is HTTP 413 (a
// request that can never succeed, not 429's "later"), code
// resource_exhausted, with a message naming --max-message-bytes, and
// changes nothing stored.
func TestHTTPBodyLimits(t *testing.T) {
	cfg := testConfig()
	cfg.MaxMessageBytes = cfg.Limits.MaxResultBytes + messageOverhead // 65 KiB
	grpcAddr, base := runHTTPServer(t, cfg)
	limit := int(httpBodyBytes(cfg))
	dedup := dedupv1.NewDedupServiceClient(dialServer(t, grpcAddr))
	claimed, err := dedup.Claim(context.Background(), &dedupv1.ClaimRequest{Consumer: "big", Key: "claimed"})
	if err != nil {
		t.Fatal(err)
	}
	// A result of 100 KB: 133 KB of base64, within the HTTP bound, but a
	// message over --max-message-bytes.
	result := base64.StdEncoding.EncodeToString(make([]byte, 100<<10))
	overMessage := `{"consumer":"big","key":"claimed","fencingToken":"1","result":"` + result + `"}`
	if len(overMessage) >= limit || len(overMessage)*3/4 <= maxMessageBytes(cfg) {
		t.Fatalf("the fixture is wrong: %d bytes of JSON, bound %d", len(overMessage), limit)
	}
	overBody := `{"consumer":"big","key":"` + strings.Repeat("k", limit) + `"}`
	cases := []struct {
		name, path, body string
		chunked          bool
	}{
		{"message over --max-message-bytes", "/dedup.v1.DedupService/Complete", overMessage, false},
		{"body over the bound, length announced", "/dedup.v1.DedupService/Claim", overBody, false},
		{"body over the bound, chunked", "/dedup.v1.DedupService/Claim", overBody, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			req, err := http.NewRequest(http.MethodPost, base+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			a := do(t, req)
			e := a.connectErr(t)
			if a.status != http.StatusRequestEntityTooLarge || e.Code != "resource_exhausted" || !strings.Contains(e.Message, "--max-message-bytes") {
				t.Fatalf("HTTP %d %+v, want 413 resource_exhausted naming --max-message-bytes", a.status, e)
			}
			if len(e.Message) > 1024 {
				t.Errorf("the refusal echoes %d bytes", len(e.Message))
			}
		})
	}
	rec, err := dedup.Lookup(context.Background(), &dedupv1.LookupRequest{Consumer: "big", Key: "claimed"})
	if err != nil || rec.GetRecord().GetState() != dedupv1.State_STATE_PENDING || rec.GetRecord().GetFencingToken() != claimed.GetFencingToken() {
		t.Fatalf("the claim after a refused Complete: %v, %v; want it PENDING as it was", rec, err)
	}
	list, err := dedup.ListRecords(context.Background(), &dedupv1.ListRecordsRequest{Consumer: "big"})
	if err != nil || len(list.GetRecords()) != 1 {
		t.Fatalf("records after the refusals: %v, %v; want only the one claimed over gRPC", list, err)
	}
}
