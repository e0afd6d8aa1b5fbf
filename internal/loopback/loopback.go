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
//   - a dns: or passthrough: scheme is set aside and the host:port after
//     it is judged; behind an explicit resolver authority
//     (dns://resolver/host:port) only an IP address counts, because that
//     resolver may map even "localhost" elsewhere (the Python and Node
//     clients apply the same rule);
//   - an ipv4: or ipv6: target is loopback only if every address in its
//     comma-separated list is;
//   - a host is loopback if it is "localhost" or an IP in 127.0.0.0/8 or
//     ::1 (an IPv4-mapped ::ffff:127.x counts, as net.IP.IsLoopback has it); any other name is not (no DNS lookup: a name may resolve
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
				var resolver string
				resolver, rest, ok = strings.Cut(auth, "/")
				if !ok {
					return false
				}
				if resolver != "" && !ipLiteral(rest) {
					return false
				}
			}
			return hostPort(rest)
		}
	}
	return hostPort(target)
}

// ipLiteral reports whether a host:port, or a bare host, names an IP
// address rather than a name.
func ipLiteral(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return net.ParseIP(host) != nil
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
