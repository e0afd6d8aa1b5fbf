package httpidem

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// The problems the middleware answers with, each a type URI: ProblemBase
// plus the anchor of its section in docs/gateway.md.
const (
	ProblemKeyMissing        = "key-missing"         // 400
	ProblemKeyInvalid        = "key-invalid"         // 400
	ProblemKeyReused         = "key-reused"          // 422: another request under this key
	ProblemInFlight          = "request-in-flight"   // 409 with Retry-After
	ProblemResponseNotStored = "response-not-stored" // 409: the first response was too large to store
	ProblemRejected          = "key-rejected"        // 409: the key holds a refusal the gateway did not store
	ProblemBodyTooLarge      = "request-too-large"   // 413
	ProblemBodyUnreadable    = "request-unreadable"  // 400
	ProblemUnavailable       = "dedupd-unavailable"  // 503 with Retry-After
	ProblemUpstream          = "upstream-failed"     // 502 (the gateway's)
	ProblemInternal          = "internal"            // 500
)

// problem is an RFC 9457 problem details object.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Key is the idempotency key, when the problem concerns one.
	Key string `json:"idempotency_key,omitempty"`
}

// writeProblem answers with a problem of the kind; retryAfter, when
// positive, goes in Retry-After (whole seconds, at least 1).
func writeProblem(w http.ResponseWriter, base, kind string, status int, title, detail, key string, retryAfter time.Duration) {
	body, _ := json.Marshal(problem{Type: base + kind, Title: title, Status: status, Detail: detail, Key: key})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	// The draft's alternative to the body's link, for clients that read
	// headers only.
	h.Set("Link", "<"+base+kind+`>; rel="describedby"; type="text/html"`)
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body) // a client gone away is nothing to report
}

// WriteProblem answers with one of the Problem* kinds, for a handler
// around the middleware (the gateway's upstream failures) that wants the
// same shape of error.
func (m *Middleware) WriteProblem(w http.ResponseWriter, kind string, status int, title, detail string) {
	writeProblem(w, m.cfg.ProblemBase, kind, status, title, detail, "", 0)
}
