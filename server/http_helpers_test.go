package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
)

// runHTTPServer runs Run with an HTTP listener and returns both addresses.
func runHTTPServer(t testing.TB, cfg Config) (grpcAddr, httpBase string) {
	t.Helper()
	cfg.HTTPListen = "127.0.0.1:0"
	ready := runServerReady(t, cfg)
	grpcAddr, _ = dedupdproc.ParseReadyFile(ready)
	httpAddr := dedupdproc.ReadyValue(ready, "http")
	if httpAddr == "" {
		t.Fatalf("the ready file names no HTTP address:\n%s", ready)
	}
	return grpcAddr, "http://" + httpAddr
}

// httpAnswer is what an HTTP call got.
type httpAnswer struct {
	status int
	header http.Header
	body   []byte
}

// connectError is the Connect protocol's error body.
type connectError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Details []struct {
		Type  string `json:"type"`
		Value string `json:"value"`
		Debug struct {
			Reason   string            `json:"reason"`
			Domain   string            `json:"domain"`
			Metadata map[string]string `json:"metadata"`
		} `json:"debug"`
	} `json:"details"`
}

// reason is the ErrorInfo reason among the details, "" when none.
func (e connectError) reason() string {
	for _, d := range e.Details {
		if d.Type == "google.rpc.ErrorInfo" {
			return d.Debug.Reason
		}
	}
	return ""
}

// postJSON posts body to base+path as curl -H 'Content-Type:
// application/json' does, with the Connect header when connect is set and
// a bearer token when token is not empty.
func postJSON(t *testing.T, base, path, token, body string, connect bool) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if connect {
		req.Header.Set("Connect-Protocol-Version", "1")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) httpAnswer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return httpAnswer{status: resp.StatusCode, header: resp.Header, body: b}
}

// ok decodes a 200 answer into v, failing the test on any other.
func (a httpAnswer) ok(t *testing.T, v any) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("HTTP %d, want 200: %s", a.status, a.body)
	}
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("answer %q: %v", a.body, err)
	}
}

// connectErr decodes an error answer, failing the test when it is not the
// Connect error JSON.
func (a httpAnswer) connectErr(t *testing.T) connectError {
	t.Helper()
	var e connectError
	if ct := a.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("HTTP %d with Content-Type %q, want a Connect error in application/json: %s", a.status, ct, a.body)
	}
	dec := json.NewDecoder(bytes.NewReader(a.body))
	if err := dec.Decode(&e); err != nil || e.Code == "" {
		t.Fatalf("HTTP %d: %q is not a Connect error (%v)", a.status, a.body, err)
	}
	return e
}
