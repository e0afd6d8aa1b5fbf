package hostcheck

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAllows holds the rule against Host values a browser, curl or an
// attacker's page can send; each expectation is the rule as the package
// doc states it, written out by hand.
func TestAllows(t *testing.T) {
	none, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := New([]string{"dedupd.internal", " .corp.example ", "Console.Example.", "192.0.2.9", "fe80::9", "[2001:db8::1]"})
	if err != nil {
		t.Fatal(err)
	}
	anyHost, err := New([]string{"*"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		host               string
		none, listed, star bool
	}{
		{"localhost", true, true, true},
		{"localhost:7080", true, true, true},
		{"LOCALHOST", true, true, true},
		{"LocalHost:7080", true, true, true},
		{"localhost.", true, true, true},
		{"foo.localhost", true, true, true},
		{"foo.localhost:7080", true, true, true},
		{"127.0.0.1:7080", true, true, true},
		{"127.1.2.3", true, true, true},
		{"[::1]:7080", true, true, true},
		{"[::1]", true, true, true},
		{"[::ffff:127.0.0.1]:7080", true, true, true},
		{"[fe80::1%25eth0]:7080", true, true, true},
		{"[::1%25lo]", true, true, true},
		{"[fe80::1%eth0]:7080", true, true, true},
		{"192.0.2.7:7080", true, true, true},
		{"evil.example", false, false, true},
		{"evil.example:7080", false, false, true},
		{"127.0.0.1.nip.io", false, false, true},
		{"localhost.evil.example", false, false, true},
		{"evil-localhost", false, false, true},
		{"2130706433", false, false, true}, // browsers send 127.0.0.1 for it
		{"", false, false, true},
		{":7080", false, false, true},
		{"[evil.example]:7080", false, false, true},
		{"dedupd.internal:7080", false, true, true},
		{"DEDUPD.INTERNAL", false, true, true},
		{"x.dedupd.internal", false, false, true},
		{"corp.example", false, true, true},
		{"a.b.corp.example:443", false, true, true},
		{"evilcorp.example", false, false, true},
		{"console.example", false, true, true},
	}
	for _, c := range cases {
		for _, p := range []struct {
			name string
			h    Hosts
			want bool
		}{{"none", none, c.none}, {"listed", listed, c.listed}, {"*", anyHost, c.star}} {
			if got := p.h.Allows(c.host); got != p.want {
				t.Errorf("Allows(%q) with list %s = %v, want %v", c.host, p.name, got, p.want)
			}
		}
	}
}

func TestNewRefusesWhatIsNotAName(t *testing.T) {
	for _, e := range []string{"", " ", "host:7080", "http://host", "a b", "user@host", "*.example.com", "."} {
		if _, err := New([]string{e}); err == nil {
			t.Errorf("New(%q) was accepted", e)
		}
	}
}

// TestGuardRefusesWith403 checks the refusal's shape: 403, a Connect error
// with the reason and the flag named, whatever protocol the request says
// it speaks, and that the handler behind it never runs.
func TestGuardRefusesWith403(t *testing.T) {
	reached := 0
	guarded := Guard(Hosts{}, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached++
		w.WriteHeader(http.StatusNoContent)
	}))
	for _, ctype := range []string{"application/json", "application/grpc-web+proto", "application/connect+json", ""} {
		req := httptest.NewRequest(http.MethodPost, "http://evil.example:7080/dedup.v1.AdminService/DeleteRecord", strings.NewReader("{}"))
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		guarded.ServeHTTP(rec, req)
		if rec.Code != http.StatusForbidden || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%q: status %d, Content-Type %q; want 403 application/json", ctype, rec.Code, rec.Header().Get("Content-Type"))
		}
		var body struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details []struct {
				Type  string `json:"type"`
				Debug struct {
					Reason   string            `json:"reason"`
					Domain   string            `json:"domain"`
					Metadata map[string]string `json:"metadata"`
				} `json:"debug"`
			} `json:"details"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%q: body %q: %v", ctype, rec.Body, err)
		}
		if body.Code != "permission_denied" || !strings.Contains(body.Message, Flag) || len(body.Details) != 1 ||
			body.Details[0].Type != "google.rpc.ErrorInfo" || body.Details[0].Debug.Reason != "HOST_NOT_ALLOWED" ||
			body.Details[0].Debug.Domain != "dedup.v1" || body.Details[0].Debug.Metadata["host"] != "evil.example:7080" {
			t.Errorf("%q: body %s", ctype, rec.Body)
		}
	}
	if reached != 0 {
		t.Errorf("the guarded handler ran %d times", reached)
	}
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:7080/console/", nil)
	rec := httptest.NewRecorder()
	guarded.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent || reached != 1 {
		t.Errorf("an allowed Host: status %d, handler ran %d times", rec.Code, reached)
	}
}
