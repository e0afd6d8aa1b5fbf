package httpidemtest

import (
	"net/http"
	"strings"
	"time"
)

// The draft's requirements on a resource, each a case named after the
// section it comes from, in the text of
// draft-ietf-httpapi-idempotency-key-header-06 (the working group's
// repository; the summary of -07 lists the same requirements).

// 2.1 Syntax: the value MUST be a Structured Field String. The quoted form
// and the bare token most clients send are one key; text that is neither
// is refused before the upstream sees it.
var _ = add("2.1 the key is a structured-field string, and a bare token is the same key", Options{}, func(s *session) {
	first := s.do(post("/orders", `"8e03978e-40d5-43e8-bc93-6894a57f9324"`, `{"sku":"a"}`))
	again := s.do(post("/orders", `8e03978e-40d5-43e8-bc93-6894a57f9324`, `{"sku":"a"}`))
	s.sameResponse(first, again)
	if got := s.up.Seen()[0].Key; got != `"8e03978e-40d5-43e8-bc93-6894a57f9324"` {
		s.t.Fatalf("the upstream saw Idempotency-Key %q, want it unchanged", got)
	}
	escaped := s.do(post("/orders", `"a\"b\\c"`, `{}`))
	bare := s.do(post("/orders", `a"b\c`, `{}`))
	if escaped.Status != http.StatusCreated || bare.Status != http.StatusBadRequest {
		s.t.Fatalf("escaped sf-string: %d; bare key with a quote: %d (want 201, then 400)", escaped.Status, bare.Status)
	}
	for _, bad := range []string{`"unterminated`, `"bad\escape"`, `two words`, `"a" trailing`, `a,b`} {
		s.problem(s.do(post("/orders", bad, `{}`)), http.StatusBadRequest, "key-invalid")
	}
	s.calls(2, "one request per valid key, none for invalid ones")
})

// 2.2 Uniqueness: a key MUST NOT be reused with another payload; 2.7: the
// resource SHOULD answer such a reuse 422 with a problem that links the
// documentation, and MUST keep failing it until the client corrects it.
var _ = add("2.2/2.7 a key reused with another payload gets 422, and keeps getting it", Options{}, func(s *session) {
	first := s.do(post("/orders", "k-reuse", `{"sku":"a"}`))
	for range 2 {
		p := s.problem(s.do(post("/orders", "k-reuse", `{"sku":"b"}`)), http.StatusUnprocessableEntity, "key-reused")
		if p["idempotency_key"] != "k-reuse" {
			s.t.Fatalf("problem %v does not name the key", p)
		}
	}
	s.sameResponse(first, s.do(post("/orders", "k-reuse", `{"sku":"a"}`)))
	s.calls(1, "only the first payload reaches the upstream")
})

// 2.3: the resource SHOULD define an expiration policy and publish it;
// 2.5.2: it MUST publish its idempotency specification, expiry included.
// The draft names no header for it: the front advertises the key's expiry
// in Dedupd-Idempotency-Expires on the first response and on every replay
// (docs/gateway.md, Retention).
var _ = add("2.3/2.5.2 the key's expiry is advertised on the response and its replays", Options{}, func(s *session) {
	first := s.do(post("/orders", "k-expiry", `{}`))
	exp, err := http.ParseTime(first.Header.Get("Dedupd-Idempotency-Expires"))
	if err != nil || !exp.After(time.Now()) {
		s.t.Fatalf("Dedupd-Idempotency-Expires %q: %v; want a future HTTP-date", first.Header.Get("Dedupd-Idempotency-Expires"), err)
	}
	s.sameResponse(first, s.do(post("/orders", "k-expiry", `{}`)))
})

// 2.6 First time request: the resource SHOULD process it normally. The
// upstream gets it once, with the client's Idempotency-Key unchanged and a
// fencing token, and the client gets the upstream's response.
var _ = add("2.6 a first request is processed normally, once", Options{}, func(s *session) {
	first := s.do(post("/orders?coupon=x", "k-first", `{"sku":"a"}`))
	if first.Status != http.StatusCreated || first.Header.Get("X-Order-Id") != "1" || first.replayed() ||
		!strings.Contains(string(first.Body), `"order":1`) {
		s.t.Fatalf("first response %d %v %q; want the upstream's 201 for order 1, not a replay", first.Status, first.Header, first.Body)
	}
	seen := s.up.Seen()
	if len(seen) != 1 || seen[0].Key != "k-first" || seen[0].FencingToken == "" || seen[0].Body != `{"sku":"a"}` {
		s.t.Fatalf("the upstream saw %+v; want one request with the key, a fencing token and the body", seen)
	}
})

// 2.6 Retry after completion: the resource SHOULD answer with the result of
// the completed operation, success or error.
var _ = add("2.6 a retry after completion gets the stored success", Options{}, func(s *session) {
	first := s.do(post("/orders", "k-retry", `{"sku":"a"}`))
	for range 3 {
		s.sameResponse(first, s.do(post("/orders", "k-retry", `{"sku":"a"}`)))
	}
	s.calls(1, "three retries after the first")
})

var _ = add("2.6 a retry after completion gets the stored error", Options{}, func(s *session) {
	for _, code := range []string{"400", "404", "409", "422"} {
		first := s.do(post("/status/"+code, "k-err-"+code, `{}`))
		s.sameResponse(first, s.do(post("/status/"+code, "k-err-"+code, `{}`)))
	}
	s.calls(4, "one request per 4xx, none for the retries")
})

// 2.6 Concurrent request: the resource SHOULD answer a retry that arrives
// while the first runs with a conflict, 2.7: a 409 with a problem; once the first ends, a
// retry gets its result.
var _ = add("2.6/2.7 a retry while the first request runs gets 409 with a problem", Options{Wait: -1}, func(s *session) {
	done := make(chan reply, 1)
	go func() { done <- s.do(post("/slow", "k-busy", `{}`)) }()
	<-s.up.Entered()
	busy := s.do(post("/slow", "k-busy", `{}`))
	s.problem(busy, http.StatusConflict, "request-in-flight")
	if busy.Header.Get("Retry-After") == "" {
		s.t.Fatalf("409 without Retry-After: %v", busy.Header)
	}
	s.up.Release()
	first := <-done
	s.sameResponse(first, s.do(post("/slow", "k-busy", `{}`)))
	s.calls(1, "the in-flight retry and the later one")
})

// 2.7 Missing key: the resource SHOULD answer 400 with a body that links
// the documentation (and MUST keep doing so until the client corrects it).
// Idempotent methods need no key.
var _ = add("2.7 a request without a required key gets 400 with a problem", Options{}, func(s *session) {
	for _, m := range []string{"POST", "PATCH"} {
		for range 2 {
			r := s.do(req{method: m, path: "/orders", ctype: "application/json", body: `{}`})
			s.problem(r, http.StatusBadRequest, "key-missing")
			if link := r.Header.Get("Link"); !strings.Contains(link, `rel="describedby"`) {
				s.t.Fatalf("400 without a describedby Link: %q", link)
			}
		}
	}
	s.calls(0, "no keyless POST or PATCH reaches the upstream")
	for _, m := range []string{"GET", "PUT", "DELETE"} {
		if r := s.do(req{method: m, path: "/orders"}); r.Status != http.StatusCreated || r.replayed() {
			s.t.Fatalf("%s without a key: %d; want the upstream's answer", m, r.Status)
		}
	}
	s.calls(3, "idempotent methods pass through")
})

// 5 Security: the resource should validate the key by its published format
// (1 to 255 characters) and SHOULD combine it with the client's identity.
var _ = add("5 keys are validated and scoped per client", Options{}, func(s *session) {
	long := strings.Repeat("k", 255)
	if r := s.do(post("/orders", long, `{}`)); r.Status != http.StatusCreated {
		s.t.Fatalf("a 255-character key: %d", r.Status)
	}
	s.problem(s.do(post("/orders", long+"k", `{}`)), http.StatusBadRequest, "key-invalid")
	alice := post("/orders", "k-shared", `{"who":"alice"}`)
	alice.auth = "Bearer alice"
	bob := post("/orders", "k-shared", `{"who":"bob"}`)
	bob.auth = "Bearer bob"
	a, b := s.do(alice), s.do(bob)
	if a.Status != http.StatusCreated || b.Status != http.StatusCreated || b.replayed() || string(a.Body) == string(b.Body) {
		s.t.Fatalf("two clients, one key: %d %q and %d %q; want two orders", a.Status, a.Body, b.Status, b.Body)
	}
	s.sameResponse(a, s.do(alice))
	s.calls(3, "the 255-character key, alice's and bob's orders")
})
