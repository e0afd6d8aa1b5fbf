package server

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// consoleSession is the part of POST /console/api/session the tests read.
type consoleSession struct {
	Auth     bool `json:"auth"`
	Identity struct {
		Name      string   `json:"name"`
		Consumers []string `json:"consumers"`
		Admin     bool     `json:"admin"`
	} `json:"identity"`
	Build struct {
		Version string `json:"version"`
	} `json:"build"`
}

// TestConsoleServesNoDataWithoutACredential: on a listener with auth on,
// the console's shell and assets are public, and hold nothing stored: a
// key and a result stored first appear in no answer to a caller without a
// credential, whatever page it asks for, while the session and the API
// refuse it. With a credential, the session names the grant of the auth
// file, and the API still answers beside the console.
func TestConsoleServesNoDataWithoutACredential(t *testing.T) {
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	_, base := runHTTPServer(t, cfg)
	const key, result = "secret-console-key-7f3a", "secret-result-9b2c"
	var claimed struct{ FencingToken string }
	postJSON(t, base, "/dedup.v1.DedupService/Claim", allToken, `{"consumer":"inventory","key":"`+key+`"}`, false).ok(t, &claimed)
	postJSON(t, base, "/dedup.v1.DedupService/Complete", allToken, fmt.Sprintf(`{"consumer":"inventory","key":%q,"fencingToken":%q,"result":"%s"}`,
		key, claimed.FencingToken, "c2VjcmV0LXJlc3VsdC05YjJj"), false).ok(t, &struct{}{}) // base64 of result

	for _, path := range []string{"/console/", "/console/consumers/inventory", "/console/consumers/inventory/records",
		"/console/consumers/inventory/records/" + key, "/console/queue", "/console/stats",
		"/console/assets/main.js", "/console/assets/pages/record.js", "/console/assets/api.js"} {
		resp := get(t, base+path)
		if resp.status != http.StatusOK {
			t.Errorf("GET %s: HTTP %d", path, resp.status)
		}
		if body := string(resp.body); strings.Contains(body, key) || strings.Contains(body, result) || strings.Contains(body, "inventory\"") {
			t.Errorf("GET %s without a credential served stored data", path)
		}
		if !strings.Contains(resp.header.Get("Content-Security-Policy"), "script-src 'self'") || resp.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: headers %v", path, resp.header)
		}
	}
	// Each body is valid for its method: an unknown member is refused
	// (INVALID_FIELD) while the request is decoded, before auth runs, as
	// gRPC decodes before its interceptors.
	lookup := `{"consumer":"inventory","key":"` + key + `"}`
	refused := []struct{ path, token, body string }{
		{"/console/api/session", "", lookup},
		{"/console/api/session", "not-a-token", lookup},
		{"/dedup.v1.DedupService/Lookup", "", lookup},
		{"/dedup.v1.DedupService/ListRecords", "", `{"consumer":"inventory"}`},
		{"/dedup.v1.AdminService/Stats", "", `{"consumer":"inventory"}`},
	}
	for _, r := range refused {
		a := postJSON(t, base, r.path, r.token, r.body, false)
		if e := a.connectErr(t); a.status != http.StatusUnauthorized || e.Code != "unauthenticated" {
			t.Errorf("POST %s with %q: HTTP %d %s", r.path, r.token, a.status, e.Code)
		}
		if strings.Contains(string(a.body), result) {
			t.Errorf("POST %s refused but told the result", r.path)
		}
	}
	emptyBearer, _ := http.NewRequest(http.MethodPost, base+"/console/api/session", strings.NewReader("{}"))
	emptyBearer.Header.Set("Authorization", "Bearer ")
	if a := do(t, emptyBearer); a.status != http.StatusUnauthorized {
		t.Errorf("an empty bearer token: HTTP %d", a.status)
	}

	grants := []struct {
		token, name string
		consumers   []string
		admin       bool
	}{
		{adminToken, "admin", nil, true},
		{inventoryToken, "inventory", []string{"inventory"}, false},
		{allToken, "all", []string{"*"}, false},
	}
	for _, g := range grants {
		var s consoleSession
		postJSON(t, base, "/console/api/session", g.token, `{}`, false).ok(t, &s)
		if !s.Auth || s.Identity.Name != g.name || s.Identity.Admin != g.admin || fmt.Sprint(s.Identity.Consumers) != fmt.Sprint(g.consumers) || s.Build.Version == "" {
			t.Errorf("session of %s: %+v", g.name, s)
		}
	}
	var found struct{ Record struct{ Key string } }
	postJSON(t, base, "/dedup.v1.DedupService/Lookup", inventoryToken, `{"consumer":"inventory","key":"`+key+`"}`, false).ok(t, &found)
	if found.Record.Key != key {
		t.Errorf("the API beside the console: %+v", found)
	}
}

// TestConsoleSessionByCertificate: under mutual TLS the browser's client
// certificate is the credential, as it is for the API.
func TestConsoleSessionByCertificate(t *testing.T) {
	f, base := runMutualTLSHTTPServer(t)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.serverCA.Pool(),
		Certificates: []tls.Certificate{clientCert(t, f.clientCA, "inventory-worker")}}}}
	resp, err := client.Post(base+"/console/api/session", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s consoleSession
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %v", resp.StatusCode, err)
	}
	if s.Identity.Name != "cert:CN=inventory-worker" || fmt.Sprint(s.Identity.Consumers) != "[inventory]" || s.Identity.Admin {
		t.Errorf("session by certificate: %+v", s)
	}
}

func get(t *testing.T, url string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

// TestConsoleActionsCannotBeForgedCrossSite: with auth off (loopback), no
// credential stands between another site and the API, so what guards the
// console's actions is that a browser can send none of them cross-site. A
// page elsewhere can send, without asking the server first, only a GET or
// a POST of a form's or text's content type; the API refuses each, and it
// answers a preflight (what a browser asks before a JSON POST) without
// allowing the other origin. The record survives all of them.
func TestConsoleActionsCannotBeForgedCrossSite(t *testing.T) {
	_, base := runHTTPServer(t, testConfig())
	const body = `{"consumer":"inventory","key":"forge-me"}`
	postJSON(t, base, "/dedup.v1.DedupService/Claim", "", body, false).ok(t, &struct{}{})
	const evil = "https://evil.example"
	forged := []struct{ method, path, contentType string }{
		{"POST", "/dedup.v1.AdminService/DeleteRecord", "text/plain"},
		{"POST", "/dedup.v1.AdminService/DeleteRecord", "text/plain;charset=UTF-8"},
		{"POST", "/dedup.v1.AdminService/DeleteRecord", "application/x-www-form-urlencoded"},
		{"POST", "/dedup.v1.AdminService/DeleteRecord", "multipart/form-data; boundary=x"},
		{"GET", "/dedup.v1.AdminService/DeleteRecord?encoding=json&message=" + url.QueryEscape(body), ""},
		{"POST", "/console/api/session", "text/plain"}, // it changes nothing, but tells no other origin
	}
	for _, f := range forged {
		req, err := http.NewRequest(f.method, base+f.path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", evil)
		if f.contentType != "" {
			req.Header.Set("Content-Type", f.contentType)
		}
		a := do(t, req)
		if a.status == http.StatusOK && f.path != "/console/api/session" {
			t.Errorf("%s %s as %q from another site: HTTP 200 %s", f.method, f.path, f.contentType, a.body)
		}
		if got := a.header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("%s %s: Access-Control-Allow-Origin %q", f.method, f.path, got)
		}
	}
	preflight, err := http.NewRequest(http.MethodOptions, base+"/dedup.v1.AdminService/DeleteRecord", nil)
	if err != nil {
		t.Fatal(err)
	}
	preflight.Header.Set("Origin", evil)
	preflight.Header.Set("Access-Control-Request-Method", "POST")
	preflight.Header.Set("Access-Control-Request-Headers", "content-type")
	if a := do(t, preflight); a.header.Get("Access-Control-Allow-Origin") != "" || a.header.Get("Access-Control-Allow-Headers") != "" {
		t.Errorf("the preflight allowed another origin: HTTP %d %v", a.status, a.header)
	}
	var found struct{ Record struct{ Key string } }
	postJSON(t, base, "/dedup.v1.DedupService/Lookup", "", body, false).ok(t, &found)
	if found.Record.Key != "forge-me" {
		t.Errorf("the record did not survive: %+v", found)
	}
	// The control: the same call as JSON, which only a page on this
	// origin can send, deletes; the refusals above were the content type's.
	postJSON(t, base, "/dedup.v1.AdminService/DeleteRecord", "", body, false).ok(t, &struct{}{})
	if a := postJSON(t, base, "/dedup.v1.DedupService/Lookup", "", body, false); a.status != http.StatusNotFound {
		t.Errorf("after the JSON delete, Lookup: HTTP %d", a.status)
	}
}
