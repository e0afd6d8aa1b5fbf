package server

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/dedupd/dedupd/server/rpcmethod"
)

// TestHTTPGetServesTheReadsOnly: over HTTP, a Connect GET reaches a method
// only when the table has it as a read (NO_SIDE_EFFECTS); a method that
// may write answers 405 to GET, so no link, prefetch or cache can write.
// A read answers as a POST does: with its reply, or with a Connect error
// carrying an ErrorInfo (here, mostly the missing consumer).
func TestHTTPGetServesTheReadsOnly(t *testing.T) {
	_, base := runHTTPServer(t, testConfig())
	reads := 0
	for _, m := range rpcmethod.All() {
		if m.Desc.IsStreamingClient() || m.Desc.IsStreamingServer() {
			continue // Connect GET is for unary calls
		}
		q := url.Values{"connect": {"v1"}, "encoding": {"json"}, "message": {`{"consumer":"orders"}`}}
		req, err := http.NewRequest(http.MethodGet, base+m.FullName+"?"+q.Encode(), nil)
		if err != nil {
			t.Fatal(err)
		}
		a := do(t, req)
		switch {
		case !m.ReadOnly && a.status != http.StatusMethodNotAllowed:
			t.Errorf("GET %s (a write): HTTP %d, want 405: %s", m.FullName, a.status, a.body)
		case m.ReadOnly && a.status != http.StatusOK && a.connectErr(t).reason() == "":
			t.Errorf("GET %s (a read): HTTP %d with no ErrorInfo, want its answer: %s", m.FullName, a.status, a.body)
		case m.ReadOnly:
			reads++
		}
	}
	if reads != 10 {
		t.Errorf("%d reads answered GET, want the 10 NO_SIDE_EFFECTS methods", reads)
	}
}
