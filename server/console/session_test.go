package console

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// unending is a body that never ends, as a caller holding the route open
// would send it.
type unending struct{}

func (unending) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// TestSessionBodyIsBounded: the session route reads at most
// sessionBodyBytes of its body; one byte more, or a body that never ends,
// is refused 413 before the credential is looked at, and with a body
// within the bound the answer is the usual one.
func TestSessionBodyIsBounded(t *testing.T) {
	identified := 0
	h := Handler(Options{Identify: func(*http.Request) (Identity, error) {
		identified++
		return Identity{Name: "ops"}, nil
	}})
	bodies := []struct {
		name   string
		body   io.Reader
		status int
	}{
		{"{}", strings.NewReader("{}"), http.StatusOK},
		{"at the bound", strings.NewReader("{}" + strings.Repeat(" ", sessionBodyBytes-2)), http.StatusOK},
		{"one byte over", strings.NewReader("{}" + strings.Repeat(" ", sessionBodyBytes-1)), http.StatusRequestEntityTooLarge},
		{"never ending", unending{}, http.StatusRequestEntityTooLarge},
	}
	for _, b := range bodies {
		before := identified
		req := httptest.NewRequest(http.MethodPost, "/console/api/session", b.body)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != b.status {
			t.Errorf("%s: status %d, want %d: %s", b.name, w.Code, b.status, w.Body)
		}
		refused := b.status != http.StatusOK
		if refused && (identified != before || !strings.Contains(w.Body.String(), `"code":"resource_exhausted"`)) {
			t.Errorf("%s: identified %d times, body %s", b.name, identified-before, w.Body)
		}
	}
}
