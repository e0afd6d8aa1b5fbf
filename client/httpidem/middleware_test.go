package httpidem_test

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dedupd/dedupd/client"
	"github.com/dedupd/dedupd/client/dedupdtest"
	"github.com/dedupd/dedupd/client/httpidem"
)

// countingHandler answers every request with a body of size bytes.
func countingHandler(calls *atomic.Int64, size int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(strings.Repeat("r", size)))
	})
}

func postTo(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader("{}"))
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestResponseAboveThePolicy: a response within MaxStoredResponseBytes but
// above the consumer's max_result_bytes (64 KiB by default) reaches the
// first client, and its key answers 409 rather than running again.
func TestResponseAboveThePolicy(t *testing.T) {
	c, err := client.New(dedupdtest.Start(t, dedupdtest.Embedded))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := httpidem.New(httpidem.Config{Client: c, Consumer: "small"})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	srv := httptest.NewServer(m.Handler(countingHandler(&calls, 100<<10)))
	defer srv.Close()
	if code, body := postTo(t, srv.URL, "k"); code != http.StatusCreated || len(body) != 100<<10 {
		t.Fatalf("first: %d, %d bytes", code, len(body))
	}
	if code, body := postTo(t, srv.URL, "k"); code != http.StatusConflict || !strings.Contains(body, "#response-not-stored") {
		t.Fatalf("retry: %d %s", code, body)
	}
	if calls.Load() != 1 {
		t.Fatalf("%d calls, want 1", calls.Load())
	}
}

// TestDedupdUnavailable: with dedupd out of reach the middleware fails
// closed: 503 with Retry-After, and the handler never runs.
func TestDedupdUnavailable(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	c, err := client.New(addr, client.WithRetries(0))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := httpidem.New(httpidem.Config{Client: c, Consumer: "down"})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	srv := httptest.NewServer(m.Handler(countingHandler(&calls, 1)))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
	req.Header.Set("Idempotency-Key", "k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || calls.Load() != 0 {
		t.Fatalf("dedupd down: %d, Retry-After %q, %d calls; want 503, a Retry-After and no call",
			resp.StatusCode, resp.Header.Get("Retry-After"), calls.Load())
	}
}

func TestConfigRefused(t *testing.T) {
	c, err := client.New("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name, cfg := range map[string]httpidem.Config{
		"no client":            {Consumer: "c"},
		"no consumer":          {Client: c},
		"store upstream error": {Client: c, Consumer: "c", OnUpstreamError: httpidem.Store},
		"bad rule":             {Client: c, Consumer: "c", Rules: []httpidem.Rule{{Method: "POST", PathPrefix: "x", Need: httpidem.Required}}},
	} {
		if _, err := httpidem.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
