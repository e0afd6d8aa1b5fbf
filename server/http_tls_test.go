package server

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestHTTPTransports: without TLS the listener speaks HTTP/1.1 and h2c
// (HTTP/2 with prior knowledge); with --tls-cert it speaks TLS only,
// negotiating h2 or http/1.1 by ALPN, and with --tls-client-ca a client
// certificate stands for a token over HTTP as over gRPC. Each answer is
// checked for the protocol it came over and the outcome of a Lookup.
func TestHTTPTransports(t *testing.T) {
	_, plain := runHTTPServer(t, testConfig())

	f, secure := runMutualTLSHTTPServer(t)
	worker := clientCert(t, f.clientCA, "inventory-worker")

	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	h1, h2 := new(http.Protocols), new(http.Protocols)
	h1.SetHTTP1(true)
	h2.SetHTTP2(true)
	client := func(p *http.Protocols, certs ...tls.Certificate) *http.Client {
		return &http.Client{Transport: &http.Transport{Protocols: p,
			TLSClientConfig: &tls.Config{RootCAs: f.serverCA.Pool(), Certificates: certs}}}
	}
	cases := []struct {
		name     string
		client   *http.Client
		base     string
		token    string
		consumer string
		proto    int
		status   int // of a Lookup of an unknown key
	}{
		{"HTTP/1.1", client(h1), plain, "", "c", 1, 404},
		{"h2c", client(h2c), plain, "", "c", 2, 404},
		{"TLS h2, token", client(h2, worker), secure, allToken, "payments", 2, 404},
		{"TLS http/1.1, token", client(h1, worker), secure, allToken, "payments", 1, 404},
		{"TLS h2, certificate for a token", client(h2, worker), secure, "", "inventory", 2, 404},
		{"TLS h2, certificate limited to its consumers", client(h2, worker), secure, "", "payments", 2, 403},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, tc.base+"/dedup.v1.DedupService/Lookup",
				strings.NewReader(`{"consumer":"`+tc.consumer+`","key":"nope"}`))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.ProtoMajor != tc.proto || resp.StatusCode != tc.status {
				t.Fatalf("HTTP/%d %d, want HTTP/%d %d", resp.ProtoMajor, resp.StatusCode, tc.proto, tc.status)
			}
		})
	}
	t.Run("plaintext to the TLS listener", func(t *testing.T) {
		resp, err := client(h1).Post(strings.Replace(secure, "https://", "http://", 1)+"/dedup.v1.DedupService/Lookup",
			"application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("plaintext answered HTTP %d", resp.StatusCode)
			}
		}
	})
	t.Run("TLS without a client certificate", func(t *testing.T) {
		resp, err := client(h2).Post(secure+"/dedup.v1.DedupService/Lookup", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("answered HTTP %d without the client certificate --tls-client-ca requires", resp.StatusCode)
		}
	})
}

// runMutualTLSHTTPServer runs an HTTP listener with TLS and
// --tls-client-ca, whose auth file grants allToken consumer payments and
// the client certificate CN=inventory-worker consumer inventory; it
// returns the fixture and the https:// base URL.
func runMutualTLSHTTPServer(t *testing.T) (*tlsFixture, string) {
	t.Helper()
	f := newTLSFixture(t)
	cfg := testConfig()
	cfg.TLSCert, cfg.TLSKey, cfg.TLSClientCA = f.cert, f.key, f.ca
	cfg.AuthTokens = authFile(t, fmt.Sprintf(`tokens: [{sha256: %s, consumers: [payments]}]
certificates:
  - {subject: "CN=inventory-worker", consumers: [inventory]}
`, sha256Hex(allToken)))
	_, base := runHTTPServer(t, cfg)
	return f, strings.Replace(base, "http://", "https://", 1)
}
