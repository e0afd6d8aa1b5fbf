package server

import (
	"net/http"
	"strings"
	"testing"
)

// postAs posts a JSON body to base+path as postJSON does, with the Host
// header set to host, as a page whose name resolved to this listener
// sends it (DNS rebinding).
func postAs(t *testing.T, host, base, path, token, body string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return do(t, req)
}

// refusedForHost fails the test unless a is the Host check's refusal.
func refusedForHost(t *testing.T, what string, a httpAnswer) {
	t.Helper()
	if a.status != http.StatusForbidden {
		t.Errorf("%s: HTTP %d %s, want 403", what, a.status, a.body)
		return
	}
	if e := a.connectErr(t); e.Code != "permission_denied" || e.reason() != "HOST_NOT_ALLOWED" || !strings.Contains(e.Message, "--http-allowed-hosts") {
		t.Errorf("%s: %+v", what, e)
	}
}

// TestRebindingRequestIsRefused: with auth off, a DeleteRecord addressed
// to another name (what a page on evil.example sends once the name
// resolves to 127.0.0.1) is refused 403 before it is routed, and so is
// every other route; the record is still there (Lookup by address says
// so). The same request addressed to 127.0.0.1:PORT, or to a name given
// in --http-allowed-hosts, deletes: the refusal was the Host's alone.
func TestRebindingRequestIsRefused(t *testing.T) {
	cfg := testConfig()
	cfg.HTTPAllowedHosts = []string{"dedupd.internal"}
	_, base := runHTTPServer(t, cfg)
	self := strings.TrimPrefix(base, "http://")
	const first, second = `{"consumer":"inventory","key":"rebind-1"}`, `{"consumer":"inventory","key":"rebind-2"}`
	for _, body := range []string{first, second} {
		postJSON(t, base, "/dedup.v1.DedupService/Claim", "", body, false).ok(t, &struct{}{})
	}
	for _, host := range []string{"evil.example", "evil.example:" + self[strings.LastIndex(self, ":")+1:], "127.0.0.1.nip.io"} {
		refusedForHost(t, "DeleteRecord to "+host, postAs(t, host, base, "/dedup.v1.AdminService/DeleteRecord", "", first))
		refusedForHost(t, "Lookup to "+host, postAs(t, host, base, "/dedup.v1.DedupService/Lookup", "", first))
		refusedForHost(t, "session to "+host, postAs(t, host, base, "/console/api/session", "", "{}"))
		req, err := http.NewRequest(http.MethodGet, base+"/console/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		refusedForHost(t, "GET /console/ to "+host, do(t, req))
	}
	for _, body := range []string{first, second} {
		var found struct{ Record struct{ Key string } }
		postAs(t, self, base, "/dedup.v1.DedupService/Lookup", "", body).ok(t, &found)
		if !strings.Contains(body, found.Record.Key) || found.Record.Key == "" {
			t.Fatalf("the record of %s did not survive: %+v", body, found)
		}
	}
	// The controls: the same DeleteRecord addressed to this listener's own
	// address, and to the listed name, deletes.
	for _, c := range []struct{ host, body string }{{self, first}, {"DEDUPD.internal:80", second}} {
		postAs(t, c.host, base, "/dedup.v1.AdminService/DeleteRecord", "", c.body).ok(t, &struct{}{})
		if a := postAs(t, self, base, "/dedup.v1.DedupService/Lookup", "", c.body); a.status != http.StatusNotFound {
			t.Errorf("after the delete addressed to %s, Lookup: HTTP %d %s", c.host, a.status, a.body)
		}
	}
}

// TestHostCheckWithAuth: with auth on, the Host is not checked unless
// --http-allowed-hosts is given. Without the list, a request addressed to
// another name reaches auth (401 without a token, 200 with one); with it,
// the same request is refused 403, with a token or without.
func TestHostCheckWithAuth(t *testing.T) {
	const lookup = `{"consumer":"inventory","key":"rebind-auth"}`
	for _, listed := range []bool{false, true} {
		cfg := testConfig()
		cfg.AuthTokens = standardAuthFile(t)
		if listed {
			cfg.HTTPAllowedHosts = []string{"dedupd.internal"}
		}
		_, base := runHTTPServer(t, cfg)
		postJSON(t, base, "/dedup.v1.DedupService/Claim", allToken, lookup, false).ok(t, &struct{}{})
		noToken := postAs(t, "evil.example", base, "/dedup.v1.DedupService/Lookup", "", lookup)
		withToken := postAs(t, "evil.example", base, "/dedup.v1.DedupService/Lookup", allToken, lookup)
		if listed {
			refusedForHost(t, "listed, no token", noToken)
			refusedForHost(t, "listed, a token", withToken)
			postAs(t, "dedupd.internal", base, "/dedup.v1.DedupService/Lookup", allToken, lookup).ok(t, &struct{}{})
			continue
		}
		if noToken.status != http.StatusUnauthorized {
			t.Errorf("no list, no token: HTTP %d %s, want 401", noToken.status, noToken.body)
		}
		withToken.ok(t, &struct{}{})
	}
}

// TestAllowedHostsAreValidated: an entry that is not a host name stops
// the start, naming the flag, rather than allowing nothing it was meant to.
func TestAllowedHostsAreValidated(t *testing.T) {
	cfg := testConfig()
	cfg.HTTPAllowedHosts = []string{"dedupd.internal:7080"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "--http-allowed-hosts") {
		t.Errorf("Validate: %v", err)
	}
	cfg.HTTPAllowedHosts = []string{"dedupd.internal", ".corp.example", "*"}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}
