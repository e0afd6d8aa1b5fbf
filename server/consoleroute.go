package server

import (
	"crypto/x509"
	"errors"
	"net/http"
	"strings"

	"github.com/dedupd/dedupd/internal/version"
	"github.com/dedupd/dedupd/server/auth"
	"github.com/dedupd/dedupd/server/console"
)

// withConsole serves the web console under console.Prefix on the HTTP
// listener, and api everywhere else. The console's pages call api on the
// same listener, so it adds no route to the store of its own.
func withConsole(api http.Handler, a *auth.Authorizer) http.Handler {
	opts := console.Options{Build: version.Get()}
	if a != nil {
		opts.Identify = func(r *http.Request) (console.Identity, error) { return identifyHTTP(a, r) }
	}
	ui := console.Handler(opts)
	bare := strings.TrimSuffix(console.Prefix, "/")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, console.Prefix) || r.URL.Path == bare {
			ui.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}

// identifyHTTP is the grant of an HTTP request's credential, decided as
// the gRPC auth interceptor decides a call's: the bearer token when the
// request has an Authorization: Bearer header (an empty token is unknown),
// else the verified client certificate.
func identifyHTTP(a *auth.Authorizer, r *http.Request) (console.Identity, error) {
	token, presented := console.BearerToken(r)
	if presented && token == "" {
		return console.Identity{}, errors.New("unknown bearer token")
	}
	var leaf *x509.Certificate
	if !presented && r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.PeerCertificates) > 0 {
		leaf = r.TLS.PeerCertificates[0]
	}
	g, err := a.Identify(token, leaf)
	if err != nil {
		return console.Identity{}, err
	}
	return console.Identity{Name: g.Name, Consumers: g.Consumers, Admin: g.Admin}, nil
}
