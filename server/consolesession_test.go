package server

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/dedupd/dedupd/internal/testing/dedupdproc"
)

// TestBadTokensAreNotLogged: a token the auth file does not know, sent
// again and again to the console's session route and to the API, is
// refused 401 each time, and appears neither in a refusal nor in the log,
// even at debug level with every call logged.
func TestBadTokensAreNotLogged(t *testing.T) {
	logs := &dedupdproc.LogBuffer{}
	cfg := testConfig()
	cfg.AuthTokens = standardAuthFile(t)
	cfg.LogAllCalls = true
	cfg.HTTPListen = "127.0.0.1:0"
	ready := runServerReadyLogging(t, cfg, slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	base := "http://" + dedupdproc.ReadyValue(ready, "http")
	const secret = "not-a-token-4b1d9e7c"
	for range 5 {
		for _, path := range []string{"/console/api/session", "/dedup.v1.DedupService/Lookup"} {
			a := postJSON(t, base, path, secret, `{"consumer":"inventory","key":"k"}`, false)
			if a.status != http.StatusUnauthorized {
				t.Fatalf("%s with an unknown token: HTTP %d %s", path, a.status, a.body)
			}
			if strings.Contains(string(a.body), secret) {
				t.Errorf("%s: the refusal repeats the token: %s", path, a.body)
			}
		}
	}
	// The control: the log does hold the API's refusals, so an absent
	// token is not an absent log.
	if got := logs.String(); strings.Contains(got, secret) || !strings.Contains(got, "Lookup") {
		t.Errorf("the log holds the token, or no refused call:\n%s", got)
	}
}
