// Package console serves dedupd's web console: a static single-page app,
// embedded in the binary, under /console/ on the HTTP listener. The app
// holds no data of its own and reaches none by a side door: every page
// reads, and every action writes, through the HTTP API on the same
// listener (POST /dedup.v1.<Service>/<Method>), so the API's handlers,
// auth, limits and metrics decide each call as they decide any other.
//
// What this package serves:
//
//   - the app's files under /console/assets/ (an unknown one is 404);
//   - the app's shell, index.html, for every other GET under /console/, so
//     that a deep link (/console/consumers/payments/records/charge-42) opens
//     cold: the app reads the path and query itself. The shell and the
//     assets hold no data, so they are served without a credential; the
//     sign-in form is in them;
//   - POST /console/api/session: who the presented credential is (its
//     name, consumers and whether it is admin) and the server's build, so
//     the app shows a caller only what the API would let it do. Without a
//     valid credential, when auth is on, it answers 401 and nothing else.
//
// Every response carries a Content-Security-Policy that allows no inline
// script and no other origin, nosniff, no-referrer and frame-ancestors
// 'none'. The credential is a bearer token the app keeps in
// sessionStorage and sends in the Authorization header (or the browser's
// client certificate under mutual TLS); no cookie is read or set, so no
// other site can make a browser act with it.
package console

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/dedupd/dedupd/internal/version"
)

// Prefix is the path the console is served under.
const Prefix = "/console/"

//go:embed app
var embedded embed.FS

// Identity is what a credential may do, as the auth file grants it.
type Identity struct {
	// Name names the credential (never the secret itself).
	Name string `json:"name"`
	// Consumers are the consumers it may act for; "*" is every one.
	Consumers []string `json:"consumers"`
	// Admin allows AdminService and StreamAdminService.
	Admin bool `json:"admin"`
}

// Options configure the console.
type Options struct {
	// Identify is who presents r's credential. Nil means auth is off: every
	// caller is an admin of every consumer.
	Identify func(r *http.Request) (Identity, error)
	// Build is the server's build, shown on the Stats page.
	Build version.Info
}

// Handler serves the console under Prefix; mount it there. It routes by
// hand rather than through http.ServeMux, which would redirect a page path
// holding "//" or "/./" (a key may) to a cleaned one.
func Handler(opts Options) http.Handler {
	files, err := fs.Sub(embedded, "app")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	static, page, who := assets(files), shell(files), session(opts)
	return secured(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest, under := strings.CutPrefix(r.URL.Path, Prefix)
		switch {
		case !under:
			http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
		case rest == "api/session" && r.Method == http.MethodPost:
			who.ServeHTTP(w, r)
		case strings.HasPrefix(rest, "api/") || strings.HasPrefix(rest, "assets/") && !readable(r.Method):
			notFound(w, r)
		case !readable(r.Method):
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "405 method not allowed", http.StatusMethodNotAllowed)
		case strings.HasPrefix(rest, "assets/"):
			static.ServeHTTP(w, r)
		default:
			page.ServeHTTP(w, r)
		}
	}))
}

func readable(method string) bool { return method == http.MethodGet || method == http.MethodHead }

// contentSecurityPolicy allows the app's own files only: no inline script
// or style, no other origin, no framing, no <base>, forms posting only
// here.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"

// secured sets the headers every console response carries.
func secured(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

// shell answers every page path with index.html: the app routes by the
// path itself. It is revalidated on every load, so an upgraded server
// serves its own app.
func shell(files fs.FS) http.Handler {
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		panic(err)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(index)
	})
}

// assets serves the app's files by name; anything else under assets/ is
// 404 rather than the shell, so a mistyped script never runs HTML.
func assets(files fs.FS) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		if name != path.Clean(name) || !fs.ValidPath(name) {
			notFound(w, r)
			return
		}
		data, err := fs.ReadFile(files, name)
		if err != nil {
			notFound(w, r)
			return
		}
		w.Header().Set("Content-Type", mediaType(name))
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(data)
	})
}

// mediaType is the type of an asset by its extension; the app has only
// these kinds.
func mediaType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

func notFound(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusNotFound)
	_, _ = w.Write([]byte("404 not found\n"))
}
