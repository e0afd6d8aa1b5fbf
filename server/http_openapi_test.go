package server

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"testing"
)

// TestHTTPServesOpenAPI: --http-listen serves the committed description at
// /openapi.yaml without a credential, while the API beside it still asks
// for one.
func TestHTTPServesOpenAPI(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	_, base := runHTTPServer(t, cfg)
	committed, err := os.ReadFile("openapi/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/openapi.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := do(t, req)
	if got.status != http.StatusOK {
		t.Fatalf("GET /openapi.yaml: %d %s", got.status, got.body)
	}
	if !bytes.Equal(got.body, committed) {
		t.Fatalf("served %d bytes differing from the committed %d of server/openapi/openapi.yaml", len(got.body), len(committed))
	}
	if ct := got.header.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type %q", ct)
	}
	api := postJSON(t, base, "/dedup.v1.DedupService/Lookup", "", `{"consumer":"orders","key":"k"}`, false)
	if api.status != http.StatusUnauthorized {
		t.Errorf("Lookup without a token beside the description: %d %s, want 401", api.status, api.body)
	}
}
