// Package loopback holds the one rule for "does this address stay on this
// machine?", used where a secret may travel in plaintext only to loopback:
// the server's refusal to serve without authentication off loopback, and
// the clients' (Go client, dedupctl) refusal to send a bearer token in
// plaintext elsewhere.
package loopback

import (
	"net"
	"strings"
)

// Target reports whether every address a gRPC target or listen address
// names is on this machine. The rule, strictest of the ones it replaced:
//
//   - unix: and unix-abstract: targets are loopback;
//   - a dns: or passthrough: scheme (with or without a resolver authority)
//     is set aside and the host:port after it is judged;
//   - an ipv4: or ipv6: target is loopback only if every address in its
//     comma-separated list is;
//   - a host is loopback if it is "localhost" or an IP in 127.0.0.0/8 or
//     ::1; any other name is not (no DNS lookup: a name may resolve
//     elsewhere tomorrow), and an empty host (":7070", every interface) is
//     not.
func Target(target string) bool {
	switch {
	case strings.HasPrefix(target, "unix:"), strings.HasPrefix(target, "unix-abstract:"):
		return true
	case strings.HasPrefix(target, "ipv4:"), strings.HasPrefix(target, "ipv6:"):
		_, list, _ := strings.Cut(target, ":")
		for addr := range strings.SplitSeq(list, ",") {
			if !hostPort(addr) {
				return false
			}
		}
		return true
	}
	for _, scheme := range []string{"dns:", "passthrough:"} {
		if rest, ok := strings.CutPrefix(target, scheme); ok {
			if auth, ok := strings.CutPrefix(rest, "//"); ok {
				// dns://[authority]/host:port: the authority is the
				// resolver, not the server.
				_, rest, ok = strings.Cut(auth, "/")
				if !ok {
					return false
				}
			}
			return hostPort(rest)
		}
	}
	return hostPort(target)
}

// hostPort judges one host:port, or a bare host.
func hostPort(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
