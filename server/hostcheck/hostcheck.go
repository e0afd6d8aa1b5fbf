// Package hostcheck refuses HTTP requests whose Host header names a site
// other than this server: the defence against DNS rebinding for a
// listener that serves without auth.
//
// A page on evil.example can make the browser resolve evil.example to
// 127.0.0.1 after it has loaded; its requests to evil.example:7080 then
// reach a loopback listener as same-origin requests, so neither CORS nor
// the content-type checks stop them, and with auth off every caller is an
// admin. What the browser cannot change is the Host header: it names
// evil.example. Jupyter, Vite's dev server and gopls check it the same way.
//
// A Host is allowed when it is:
//   - an IP address literal (127.0.0.1, [::1], 192.0.2.7, a zone or an
//     IPv4-mapped form): rebinding needs a DNS name the attacker controls,
//     and a browser sends an IP literal only to the address it names;
//   - localhost or a name under .localhost, which browsers resolve to
//     loopback themselves (RFC 6761), never through the attacker's DNS;
//   - a name the operator lists (dedupd serve --http-allowed-hosts): an
//     exact name, ".example.com" for that name and every name under it,
//     or "*" for any Host (the check off).
//
// The port is ignored (the browser sends the one it connects to), names
// are compared in lower case without a trailing dot, and an empty Host
// (HTTP/1.0 without one) is refused: a rule that fails closed.
package hostcheck

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/dedupd/dedupd/internal/clip"
	"github.com/dedupd/dedupd/server/rpcerrors"
)

// Reason is the ErrorInfo reason of the refusal. It is not one of the
// API's reasons (rpcerrors.Reasons): the request never reaches an RPC, and
// a caller that addresses the server by a name it serves never sees it.
const Reason = "HOST_NOT_ALLOWED"

// Flag is the serve flag that extends the allowed names; the refusal
// names it.
const Flag = "--http-allowed-hosts"

// Hosts is the set of Host names allowed besides IP literals and
// localhost. The zero value allows those alone.
type Hosts struct {
	exact    map[string]bool
	suffixes []string // ".example.com", matching example.com too
	any      bool
}

// New parses the operator's list (the flag's comma-separated entries,
// already split). An entry is a name, ".name" for a name and everything
// under it, an IP literal (always allowed anyway), or "*"; it names no
// port and no scheme.
func New(entries []string) (Hosts, error) {
	h := Hosts{exact: map[string]bool{}}
	for _, e := range entries {
		name := normalize(strings.TrimSpace(e))
		switch {
		case name == "*":
			h.any = true
		case isIP(strings.Trim(name, "[]")):
			// allowed anyway
		case name == "" || name == ".":
			return Hosts{}, fmt.Errorf("%s: an empty entry", Flag)
		case strings.ContainsAny(name, ":/@ *"):
			return Hosts{}, fmt.Errorf("%s: %q is not a host name: give the name alone, without scheme or port", Flag, e)
		case strings.HasPrefix(name, "."):
			h.suffixes = append(h.suffixes, name)
		default:
			h.exact[name] = true
		}
	}
	return h, nil
}

// Allows reports whether a request's Host (r.Host: the Host header, or
// :authority on HTTP/2) names this server.
func (h Hosts) Allows(host string) bool {
	if h.any {
		return true
	}
	name := normalize(hostOnly(host))
	if name == "" {
		return false
	}
	if isIP(name) {
		return true
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") || h.exact[name] {
		return true
	}
	for _, s := range h.suffixes {
		if strings.HasSuffix(name, s) || name == s[1:] {
			return true
		}
	}
	return false
}

func isIP(name string) bool {
	_, err := netip.ParseAddr(name)
	return err == nil
}

// hostOnly is host without its port and IPv6 brackets. A Host that is not
// host[:port] comes back whole, to be judged (and refused) as a name.
func hostOnly(host string) string {
	if name, _, err := net.SplitHostPort(host); err == nil {
		return name
	}
	if inner, ok := strings.CutPrefix(host, "["); ok {
		if inner, ok = strings.CutSuffix(inner, "]"); ok {
			return inner
		}
	}
	return host
}

// normalize compares names as DNS does: in any case, with or without the
// root's trailing dot. An IPv6 zone written URL-style (%25) is unescaped.
func normalize(name string) string {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	return strings.Replace(name, "%25", "%", 1)
}

// Guard serves next the requests whose Host h allows and refuses the
// others 403, with a Connect error (permission_denied, ErrorInfo reason
// Reason, the Host in its metadata) whatever the request's protocol: a
// gRPC-Web or streaming caller must see the status, not a 200 holding
// an error it may never read.
func Guard(h Hosts, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.Allows(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		_ = errorWriter.Write(w, asUnknownProtocol, refusal(r.Host))
	})
}

// errorWriter writes Connect's error JSON; handed a request of no protocol
// (asUnknownProtocol) it writes the unary form, with the code's HTTP
// status.
var (
	errorWriter       = connect.NewErrorWriter()
	asUnknownProtocol = &http.Request{Header: http.Header{}}
)

func refusal(host string) *connect.Error {
	shown := clip.String(host, clip.MaxEchoed)
	err := connect.NewError(connect.CodePermissionDenied, fmt.Errorf(
		"host %q is not allowed: this listener answers only requests addressed to localhost, an IP address or a name "+
			"listed in dedupd serve %s, so that a page on another site cannot reach it by DNS rebinding; add the name there to allow it",
		shown, Flag))
	info := &errdetails.ErrorInfo{Reason: Reason, Domain: rpcerrors.ErrorDomain, Metadata: map[string]string{"host": shown}}
	if detail, derr := connect.NewErrorDetail(info); derr == nil {
		err.AddDetail(detail)
	}
	return err
}
