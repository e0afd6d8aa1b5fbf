package httpidem

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

func TestParseKey(t *testing.T) {
	cases := []struct {
		lines   []string
		want    string
		wantErr string
	}{
		{[]string{`"a1"`}, "a1", ""},
		{[]string{`a1`}, "a1", ""},
		{[]string{` "a1" `}, "a1", ""},
		{[]string{`"a1";v=2`}, "a1", ""},
		{[]string{`"a \"b\" \\c"`}, `a "b" \c`, ""},
		{[]string{`"` + strings.Repeat("x", 255) + `"`}, strings.Repeat("x", 255), ""},
		{[]string{strings.Repeat("x", 256)}, "", "more than 255"},
		{[]string{`""`}, "", "empty"},
		{[]string{``}, "", "empty"},
		{[]string{`a1`, `a1`}, "", "appears 2 times"},
		{[]string{`"a1`}, "", "no closing quote"},
		{[]string{`"a\n"`}, "", "must escape"},
		{[]string{`"é"`}, "", "printable ASCII"},
		{[]string{`"a" b`}, "", "unexpected text"},
		{[]string{`a b`}, "", "no space"},
		{[]string{`a,b`}, "", "comma"},
	}
	for _, c := range cases {
		got, err := parseKey(c.lines)
		if c.wantErr == "" && (err != nil || got != c.want) {
			t.Errorf("parseKey(%q) = %q, %v; want %q", c.lines, got, err, c.want)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("parseKey(%q) = %q, %v; want an error with %q", c.lines, got, err, c.wantErr)
		}
	}
}

func TestNeed(t *testing.T) {
	var rules []Rule
	for _, s := range []string{"POST /webhooks=optional", "* /internal=off", "POST /internal/pay=required", "PUT /=required", "* /api=optional", "POST /api=required"} {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, r)
	}
	cases := []struct {
		method, path string
		want         Need
	}{
		{"POST", "/orders", Required},          // default
		{"PATCH", "/orders/1", Required},       // default
		{"GET", "/orders", Off},                // no rule
		{"DELETE", "/orders", Off},             // no rule
		{"POST", "/webhooks", Optional},        // exact prefix
		{"POST", "/webhooks/stripe", Optional}, // below it
		{"POST", "/webhooksx", Required},       // not below it: the default
		{"PATCH", "/internal/x", Off},          // "*" rule
		{"POST", "/internal/pay/1", Required},  // longer prefix wins over "*"
		{"PUT", "/anything", Required},         // a method added
		{"POST", "/api/x", Required},           // named method wins at equal length
		{"PATCH", "/api/x", Optional},          // "*" at that length beats the shorter default
	}
	for _, c := range cases {
		if got := need(rules, c.method, c.path); got != c.want {
			t.Errorf("need(%s %s) = %d, want %d", c.method, c.path, got, c.want)
		}
	}
	for _, bad := range []string{"POST", "POST orders=required", "POST /=maybe", "/=required"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("ParseRule(%q) accepted", bad)
		}
	}
}

func TestStoredResponseRoundTrip(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"a=1", "b=2"}, "Connection": {"X-Hop"},
		"X-Hop": {"1"}, http.TrailerPrefix + "X-Sum": {"9"}, "Date": {"Mon, 01 Jan 2024 00:00:00 GMT"}, "Transfer-Encoding": {"chunked"}, "Idempotent-Replayed": {"true"}}
	body := []byte("HTTP/1.1 200 OK\r\n\r\nnot a header\x00\xff")
	got, err := decodeResponse(encodeResponse(418, storable(h, "Idempotent-Replayed"), body))
	if err != nil {
		t.Fatal(err)
	}
	want := http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"a=1", "b=2"}}
	if got.status != 418 || !bytes.Equal(got.body, body) || len(got.header) != len(want) ||
		got.header.Get("Content-Type") != "application/json" || len(got.header.Values("Set-Cookie")) != 2 {
		t.Fatalf("round trip = %d %v %q; want 418 %v and the body byte for byte", got.status, got.header, got.body, want)
	}
}

func TestFingerprintFields(t *testing.T) {
	base := func() *http.Request {
		r, _ := http.NewRequest(http.MethodPost, "http://x/a%2Fb?q=1", nil)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-A", "1")
		return r
	}
	fp := fingerprint(base(), []byte("body"), []string{"x-a"})
	if !bytes.Equal(fp, fingerprint(base(), []byte("body"), []string{"X-A", "x-a"})) {
		t.Fatal("the fingerprint depends on how the headers were named")
	}
	changes := map[string]func(r *http.Request) []byte{
		"escaped path": func(r *http.Request) []byte { r.URL.RawPath, r.URL.Path = "", "/a/b"; return []byte("body") },
		"body":         func(r *http.Request) []byte { return []byte("bodz") },
		"fields shifted": func(r *http.Request) []byte {
			r.URL.RawQuery = "q=1" + "application/json"
			r.Header.Del("Content-Type")
			return []byte("body")
		},
		"header": func(r *http.Request) []byte { r.Header.Set("X-A", "2"); return []byte("body") },
	}
	for name, change := range changes {
		r := base()
		b := change(r)
		if bytes.Equal(fp, fingerprint(r, b, []string{"X-A"})) {
			t.Errorf("%s: same fingerprint", name)
		}
	}
}
