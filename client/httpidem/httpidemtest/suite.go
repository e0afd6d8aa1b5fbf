package httpidemtest

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Options are the settings a test asks its front for; the zero value is
// the front's defaults.
type Options struct {
	// Wait is how long a retry waits for the first request (0: the
	// default; negative: not at all).
	Wait time.Duration
	// MaxStoredResponseBytes and MaxRequestBytes, 0 for the defaults.
	MaxStoredResponseBytes, MaxRequestBytes int64
	// On5xx: "release" (default), "store" or "keep".
	On5xx string
	// LeaseTTL of a first request, 0 for the default.
	LeaseTTL time.Duration
	// Rules in the form "METHOD /prefix=required|optional|off".
	Rules []string
	// IdentityHeader scopes keys instead of Authorization.
	IdentityHeader string
	// FingerprintHeaders are added to the fingerprint.
	FingerprintHeaders []string
}

// Front starts a front (a middleware around upstream, or a gateway
// proxying to it) with opt and returns its base URL. Each call must use a
// fresh dedupd consumer or keys of its own, so tests do not meet.
type Front func(t *testing.T, upstream http.Handler, opt Options) string

// Run runs every case of the suite against front.
func Run(t *testing.T, front Front) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := NewUpstream()
			t.Cleanup(up.Release)
			s := &session{t: t, up: up, base: front(t, up, c.opt)}
			c.run(s)
		})
	}
}

type testCase struct {
	name string
	opt  Options
	run  func(s *session)
}

// cases gathers the suite; each file adds its own.
var cases []testCase

//
//nolint:unparam // the result lets a case register itself in a var declaration beside its doc comment
func add(name string, opt Options, run func(s *session)) struct{} {
	cases = append(cases, testCase{name, opt, run})
	return struct{}{}
}

// session is one test's front, upstream and client.
type session struct {
	t    *testing.T
	up   *Upstream
	base string
}

// reply is a response read whole.
type reply struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r reply) replayed() bool { return r.Header.Get("Idempotent-Replayed") == "true" }

// problem decodes an RFC 9457 body, failing the test when it is not one.
func (s *session) problem(r reply, status int, kind string) map[string]any {
	s.t.Helper()
	if r.Status != status {
		s.t.Fatalf("status %d (%s), want %d", r.Status, r.Body, status)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		s.t.Fatalf("Content-Type %q, want application/problem+json", ct)
	}
	var p map[string]any
	if err := json.Unmarshal(r.Body, &p); err != nil {
		s.t.Fatalf("problem body %q: %v", r.Body, err)
	}
	if typ, _ := p["type"].(string); !strings.HasSuffix(typ, "#"+kind) || !strings.HasPrefix(typ, "https://") {
		s.t.Fatalf("problem type %q, want a URI ending in #%s", typ, kind)
	}
	if p["status"] != float64(status) || p["title"] == "" {
		s.t.Fatalf("problem %v: want status %d and a title", p, status)
	}
	return p
}

// req is one request of a test.
type req struct {
	method, path, key, ctype, auth string
	body                           string
	header                         http.Header
}

func post(path, key, body string) req {
	return req{method: "POST", path: path, key: key, ctype: "application/json", body: body}
}

func (s *session) do(q req) reply {
	s.t.Helper()
	hr, err := http.NewRequestWithContext(s.t.Context(), q.method, s.base+q.path, bytes.NewReader([]byte(q.body)))
	if err != nil {
		s.t.Fatal(err)
	}
	maps.Copy(hr.Header, q.header)
	if q.key != "" {
		hr.Header.Set("Idempotency-Key", q.key)
	}
	if q.ctype != "" {
		hr.Header.Set("Content-Type", q.ctype)
	}
	if q.auth != "" {
		hr.Header.Set("Authorization", q.auth)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		s.t.Fatalf("%s %s: %v", q.method, q.path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: reading the body: %v", q.method, q.path, err)
	}
	return reply{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// calls checks how many requests reached the upstream.
func (s *session) calls(want int, why string) {
	s.t.Helper()
	if got := s.up.Calls(); got != want {
		s.t.Fatalf("the upstream got %d requests, want %d: %s (saw %+v)", got, want, why, s.up.Seen())
	}
}

// sameResponse checks that a replay is the first response byte for byte.
func (s *session) sameResponse(first, again reply) {
	s.t.Helper()
	if first.Status != again.Status || !bytes.Equal(first.Body, again.Body) {
		s.t.Fatalf("replay %d %q, want the first response %d %q", again.Status, again.Body, first.Status, first.Body)
	}
	for _, h := range []string{"Content-Type", "X-Upstream", "X-Order-Id", "Dedupd-Idempotency-Expires"} {
		if first.Header.Get(h) != again.Header.Get(h) {
			s.t.Fatalf("replay's %s = %q, the first response's %q", h, again.Header.Get(h), first.Header.Get(h))
		}
	}
	if !again.replayed() || first.replayed() {
		s.t.Fatalf("Idempotent-Replayed: first %q, replay %q; want absent, then true",
			first.Header.Get("Idempotent-Replayed"), again.Header.Get("Idempotent-Replayed"))
	}
}
