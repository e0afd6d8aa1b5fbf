package httpidemtest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The front's own promises (docs/gateway.md), beyond the draft's text.

var _ = add("rules: per method and path prefix, optional and off routes", Options{Rules: []string{
	"POST /webhooks=optional", "POST /health=off", "PUT /orders=required", "* /admin=off",
}}, func(s *session) {
	if r := s.do(req{method: "POST", path: "/webhooks/stripe", body: `{}`}); r.Status != http.StatusOK {
		s.t.Fatalf("an optional route without a key: %d, want the upstream's 200", r.Status)
	}
	first := s.do(post("/webhooks/stripe", "evt-1", `{}`))
	s.sameResponse(first, s.do(post("/webhooks/stripe", "evt-1", `{}`)))
	s.calls(2, "the keyless webhook and the keyed one once")
	for range 2 {
		if r := s.do(post("/health", "same", `{}`)); r.Status != http.StatusOK || r.replayed() {
			s.t.Fatalf("an off route: %d replayed=%v", r.Status, r.replayed())
		}
		s.do(req{method: "PATCH", path: "/admin/x", body: `{}`})
	}
	s.calls(6, "off routes pass through, key or not")
	s.problem(s.do(req{method: "PUT", path: "/orders/7", body: `{}`}), http.StatusBadRequest, "key-missing")
	if r := s.do(post("/ordersx", "", `{}`)); r.Status != http.StatusBadRequest {
		s.t.Fatalf("/ordersx is under POST /, not an /orders rule: %d", r.Status)
	}
	s.calls(6, "the refused PUT and POST")
})

var _ = add("fingerprint: method, path, query, Content-Type, body and configured headers", Options{
	FingerprintHeaders: []string{"X-Currency"}}, func(s *session) {
	base := post("/orders?a=1", "k-fp", `{"sku":"a"}`)
	base.header = http.Header{"X-Currency": {"EUR"}}
	first := s.do(base)
	variants := map[string]func(q *req){
		"method":       func(q *req) { q.method = "PATCH" },
		"path":         func(q *req) { q.path = "/orders/2?a=1" },
		"query":        func(q *req) { q.path = "/orders?a=2" },
		"content type": func(q *req) { q.ctype = "text/plain" },
		"body":         func(q *req) { q.body = `{"sku":"b"}` },
		"header":       func(q *req) { q.header = http.Header{"X-Currency": {"USD"}} },
	}
	for name, change := range variants {
		q := base
		change(&q)
		if r := s.do(q); r.Status != http.StatusUnprocessableEntity {
			s.t.Fatalf("another %s under the key: %d %s, want 422", name, r.Status, r.Body)
		}
	}
	other := base
	other.header = http.Header{"X-Currency": {"EUR"}, "X-Trace": {"not in the fingerprint"}}
	s.sameResponse(first, s.do(other))
	s.calls(1, "only the first")
})

var _ = add("replay: hop-by-hop headers are not stored, Date is fresh", Options{}, func(s *session) {
	first := s.do(post("/orders", "k-hop", `{}`))
	again := s.do(post("/orders", "k-hop", `{}`))
	s.sameResponse(first, again)
	for _, r := range []reply{first, again} {
		if r.Header.Get("X-Hop") != "" || r.Header.Get("Date") == "" {
			s.t.Fatalf("headers %v: want no X-Hop (named by Connection) and a Date", r.Header)
		}
	}
})

var _ = add("5xx releases the key by default: the retry runs again with the next token", Options{}, func(s *session) {
	if r := s.do(post("/status/503", "k-5xx", `{}`)); r.Status != http.StatusServiceUnavailable || r.replayed() {
		s.t.Fatalf("first: %d", r.Status)
	}
	if r := s.do(post("/status/503", "k-5xx", `{}`)); r.Status != http.StatusServiceUnavailable || r.replayed() ||
		!strings.Contains(string(r.Body), "call 2") {
		s.t.Fatalf("retry after a 5xx: %d %q replayed=%v; want it run again", r.Status, r.Body, r.replayed())
	}
	seen := s.up.Seen()
	if seen[0].FencingToken == seen[1].FencingToken {
		s.t.Fatalf("both runs carried fencing token %s", seen[0].FencingToken)
	}
	for _, code := range []string{"408", "429"} {
		s.do(post("/status/"+code, "k-"+code, `{}`))
		s.do(post("/status/"+code, "k-"+code, `{}`))
	}
	s.calls(6, "each 5xx, 408 and 429 runs again")
})

var _ = add("5xx stored when configured: the retry gets it replayed", Options{On5xx: "store"}, func(s *session) {
	first := s.do(post("/status/500", "k-500", `{}`))
	s.sameResponse(first, s.do(post("/status/500", "k-500", `{}`)))
	s.calls(1, "a stored 500")
})

var _ = add("5xx kept when configured: 409 until the lease runs out, then a new run", Options{
	On5xx: "keep", Wait: -1, LeaseTTL: 3 * time.Second}, func(s *session) {
	s.do(post("/status/502", "k-keep", `{}`))
	s.problem(s.do(post("/status/502", "k-keep", `{}`)), http.StatusConflict, "request-in-flight")
	for {
		r := s.do(post("/status/502", "k-keep", `{}`))
		if r.Status == http.StatusBadGateway {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.calls(2, "the first run and the one after the lease")
})

var _ = add("a response over the stored limit passes through; its key answers 409", Options{
	MaxStoredResponseBytes: 64 << 10}, func(s *session) {
	at := s.do(post("/big/65536", "k-at-limit", `{}`))
	s.sameResponse(at, s.do(post("/big/65536", "k-at-limit", `{}`)))
	big := s.do(post("/big/300000", "k-big", `{}`))
	if big.Status != http.StatusOK || len(big.Body) != 300000 || big.Body[299999] != '2' {
		s.t.Fatalf("the large response: %d, %d bytes; want all 300000 of call 2", big.Status, len(big.Body))
	}
	p := s.problem(s.do(post("/big/300000", "k-big", `{}`)), http.StatusConflict, "response-not-stored")
	if d, _ := p["detail"].(string); !strings.Contains(d, "larger than") {
		s.t.Fatalf("problem %v does not say why", p)
	}
	s.calls(2, "the response at the limit and the large one, once each")
})

var _ = add("a request body over the limit gets 413 before the upstream sees it", Options{MaxRequestBytes: 1000}, func(s *session) {
	s.problem(s.do(post("/orders", "k-413", strings.Repeat("x", 1001))), http.StatusRequestEntityTooLarge, "request-too-large")
	// Without a Content-Length (chunked), the limit is found while reading.
	hr, _ := http.NewRequestWithContext(s.t.Context(), http.MethodPost, s.base+"/orders", io.MultiReader(strings.NewReader(strings.Repeat("y", 999)), strings.NewReader("zz")))
	hr.Header.Set("Idempotency-Key", "k-413-chunked")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		s.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		s.t.Fatalf("chunked body of 1001 bytes: %d", resp.StatusCode)
	}
	if r := s.do(post("/orders", "k-413-ok", strings.Repeat("x", 1000))); r.Status != http.StatusCreated {
		s.t.Fatalf("a body at the limit: %d", r.Status)
	}
	s.calls(1, "only the body at the limit")
})

var _ = add("fencing: a client's Dedupd-Fencing-Token never reaches the upstream", Options{}, func(s *session) {
	spoof := post("/orders", "k-fence", `{}`)
	spoof.header = http.Header{"Dedupd-Fencing-Token": {"999"}}
	s.do(spoof)
	s.do(req{method: "GET", path: "/orders", header: spoof.header})
	seen := s.up.Seen()
	if seen[0].FencingToken == "999" || seen[0].FencingToken == "" || seen[1].FencingToken != "" {
		s.t.Fatalf("fencing tokens seen: %q (keyed) and %q (passed through); want the front's, then none",
			seen[0].FencingToken, seen[1].FencingToken)
	}
})

var _ = add("identity: a configured header scopes keys instead of Authorization", Options{IdentityHeader: "X-Tenant"}, func(s *session) {
	order := func(tenant, auth string) reply {
		q := post("/orders", "k-tenant", fmt.Sprintf(`{"tenant":%q}`, tenant))
		q.header, q.auth = http.Header{"X-Tenant": {tenant}}, auth
		return s.do(q)
	}
	a := order("acme", "Bearer one")
	s.sameResponse(a, order("acme", "Bearer two"))
	if b := order("globex", "Bearer one"); b.Status != http.StatusCreated || b.replayed() {
		s.t.Fatalf("another tenant, same key: %d replayed=%v", b.Status, b.replayed())
	}
	s.calls(2, "one order per tenant")
})
