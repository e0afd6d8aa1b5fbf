package console

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/internal/version"
)

func serve(t *testing.T, h http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader("{}"))
	maps.Copy(req.Header, header)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func shellBody(t *testing.T) string {
	t.Helper()
	b, err := fs.ReadFile(embedded, "app/index.html")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRoutes: what each path under /console/ answers, decided by hand
// from the package's contract: every page path (deep, with any escaped
// key) is the shell, an unknown asset or api path is 404 and never the
// shell, only GET and HEAD read, and every answer carries the security
// headers.
func TestRoutes(t *testing.T) {
	h := Handler(Options{Build: version.Info{Version: "v9.9.9"}})
	shell := shellBody(t)
	cases := []struct {
		method, target string
		status         int
		body           string // "shell", or a substring
		contentType    string
	}{
		{"GET", "/console/", 200, "shell", "text/html; charset=utf-8"},
		{"HEAD", "/console/", 200, "", "text/html; charset=utf-8"},
		{"GET", "/console", 301, "", ""},
		{"GET", "/console/consumers/payments/records/charge-42", 200, "shell", "text/html; charset=utf-8"},
		{"GET", "/console/consumers/payments/records?state=pending&lease_expired=true", 200, "shell", "text/html; charset=utf-8"},
		{"GET", "/console/consumers/p/records/a%2F%2Fb%3F%23%25%20%C3%BC", 200, "shell", "text/html; charset=utf-8"},
		{"GET", "/console/consumers/p/records/x//y/./z", 200, "shell", "text/html; charset=utf-8"},
		{"GET", "/console/consumers/p/records/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", 200, "shell", "text/html; charset=utf-8"},
		{"GET", "/console/assets/main.js", 200, "import ", "text/javascript; charset=utf-8"},
		{"GET", "/console/assets/pages/record.js", 200, "export ", "text/javascript; charset=utf-8"},
		{"GET", "/console/assets/console.css", 200, ":root", "text/css; charset=utf-8"},
		{"GET", "/console/assets/nope.js", 404, "404", "text/plain; charset=utf-8"},
		{"GET", "/console/assets/", 404, "404", "text/plain; charset=utf-8"},
		{"GET", "/console/assets/pages", 404, "404", "text/plain; charset=utf-8"},
		{"GET", "/console/assets/../index.html", 404, "404", "text/plain; charset=utf-8"},
		{"GET", "/console/assets/./main.js", 404, "404", "text/plain; charset=utf-8"},
		{"GET", "/console/api/session", 404, "404", "text/plain; charset=utf-8"},
		{"POST", "/console/api/other", 404, "404", "text/plain; charset=utf-8"},
		{"POST", "/console/", 405, "method not allowed", "text/plain; charset=utf-8"},
		{"DELETE", "/console/consumers/p/records/k", 405, "method not allowed", "text/plain; charset=utf-8"},
		{"POST", "/console/assets/main.js", 404, "404", "text/plain; charset=utf-8"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.target, func(t *testing.T) {
			w := serve(t, h, tc.method, tc.target, nil)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			assertSecured(t, w.Header())
			if tc.contentType != "" && w.Header().Get("Content-Type") != tc.contentType {
				t.Errorf("Content-Type %q, want %q", w.Header().Get("Content-Type"), tc.contentType)
			}
			switch {
			case tc.body == "shell" && w.Body.String() != shell:
				t.Errorf("not the shell: %.200s", w.Body)
			case tc.body != "shell" && !strings.Contains(w.Body.String(), tc.body):
				t.Errorf("body %.200q lacks %q", w.Body, tc.body)
			case tc.status != 200 && strings.Contains(w.Body.String(), "<html"):
				t.Errorf("a refusal served HTML")
			}
			if tc.status == 301 && w.Header().Get("Location") != Prefix {
				t.Errorf("redirect to %q", w.Header().Get("Location"))
			}
		})
	}
}

func assertSecured(t *testing.T, h http.Header) {
	t.Helper()
	want := map[string]string{
		"X-Content-Type-Options": "nosniff",
		"Referrer-Policy":        "no-referrer",
		"X-Frame-Options":        "DENY",
	}
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}
	csp := h.Get("Content-Security-Policy")
	for _, directive := range []string{"default-src 'self'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'", "object-src 'none'"} {
		if !strings.Contains(csp, directive+";") && !strings.HasSuffix(csp, directive) {
			t.Errorf("CSP %q lacks %q", csp, directive)
		}
	}
	if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "http") || strings.Contains(csp, "*") {
		t.Errorf("CSP %q allows inline code or another origin", csp)
	}
	if h.Get("Set-Cookie") != "" {
		t.Errorf("a console answer set a cookie")
	}
}

// TestSession: the identity the app is told is the one Identify gives for
// the request's credential; without one, 401 and no identity; with auth
// off, an admin of every consumer.
func TestSession(t *testing.T) {
	identify := func(r *http.Request) (Identity, error) {
		token, ok := BearerToken(r)
		if ok && token == "good" {
			return Identity{Name: "ops", Consumers: []string{"payments"}}, nil
		}
		return Identity{}, errors.New("unknown bearer token")
	}
	build := version.Info{Version: "v1.2.3", Revision: "abc"}
	on := Handler(Options{Identify: identify, Build: build})
	off := Handler(Options{Build: build})
	cases := []struct {
		name   string
		h      http.Handler
		auth   string
		status int
		want   sessionReply
	}{
		{"good token", on, "Bearer good", 200, sessionReply{Auth: true, Identity: Identity{Name: "ops", Consumers: []string{"payments"}}, Build: build}},
		{"scheme in another case", on, "bEaReR good", 200, sessionReply{Auth: true, Identity: Identity{Name: "ops", Consumers: []string{"payments"}}, Build: build}},
		{"unknown token", on, "Bearer bad", 401, sessionReply{}},
		{"no credential", on, "", 401, sessionReply{}},
		{"basic scheme", on, "Basic good", 401, sessionReply{}},
		{"auth off", off, "", 200, sessionReply{Identity: Identity{Name: "anyone (auth is off)", Consumers: []string{"*"}, Admin: true}, Build: build}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			header := http.Header{}
			if tc.auth != "" {
				header.Set("Authorization", tc.auth)
			}
			w := serve(t, tc.h, "POST", "/console/api/session", header)
			if w.Code != tc.status {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.status, w.Body)
			}
			assertSecured(t, w.Header())
			if w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control %q", w.Header().Get("Cache-Control"))
			}
			body, _ := io.ReadAll(w.Body)
			if tc.status != 200 {
				var e struct{ Code, Message string }
				if err := json.Unmarshal(body, &e); err != nil || e.Code != "unauthenticated" {
					t.Fatalf("refusal %s", body)
				}
				if strings.Contains(string(body), "ops") || strings.Contains(string(body), "v1.2.3") {
					t.Errorf("a refusal told who or what: %s", body)
				}
				return
			}
			var got sessionReply
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tc.want)
			if string(gj) != string(wj) {
				t.Errorf("session %s, want %s", gj, wj)
			}
		})
	}
}
