'use strict';
// Which gRPC targets are this machine only: where the Client may send a
// bearer token without TLS.

const net = require('node:net');

// The addresses a plaintext token may go to: 127.0.0.0/8 and ::1. BlockList
// also matches an IPv4-mapped ::ffff:127.x.y.z against 127.0.0.0/8, as Go's
// net.IP.IsLoopback does.
const LOOPBACK = new net.BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');

/**
 * Whether a gRPC target names this machine only, where a plaintext token
 * crosses no network. The rule is the server's and the Go client's
 * (internal/loopback), with the Python client's one addition:
 * - unix: and unix-abstract: targets are loopback;
 * - an ipv4:/ipv6: list is loopback only if every address in it is
 *   (grpc-js may connect to any of them);
 * - a dns: or passthrough: scheme is set aside and the one host:port after
 *   it judged; behind an explicit resolver (dns://resolver/host:port) only
 *   an address qualifies, since that resolver may map even localhost
 *   anywhere;
 * - a host is loopback if it is exactly localhost or an address in
 *   127.0.0.0/8 (IPv4-mapped too) or ::1; no other name is (no DNS lookup),
 *   nor is any other scheme.
 */
function isLoopback(target) {
  const [, scheme = 'dns', rest = target] = /^(unix|unix-abstract|ipv4|ipv6|dns|passthrough):(.*)$/s.exec(target) || [];
  if (scheme === 'unix' || scheme === 'unix-abstract') return true;
  if (scheme === 'ipv4' || scheme === 'ipv6') {
    return rest.replace(/^\/+/, '').split(',').every((addr) => isLoopbackAddress(hostOf(addr)));
  }
  if (rest.includes(',')) return false; // one host only; a list here is malformed
  if (!rest.startsWith('//')) return isLoopbackHost(hostOf(rest));
  const slash = rest.indexOf('/', 2); // dns://[resolver]/host:port
  if (slash < 0) return false;
  const host = hostOf(rest.slice(slash + 1));
  return slash > 2 ? isLoopbackAddress(host) : isLoopbackHost(host);
}

/** The host of host, host:port, [v6] or [v6]:port, or a bare IPv6 address; null if malformed. */
function hostOf(hostPort) {
  if (hostPort.startsWith('[')) {
    const end = hostPort.indexOf(']');
    if (end < 0 || !(end === hostPort.length - 1 || hostPort[end + 1] === ':')) return null;
    return hostPort.slice(1, end);
  }
  if (hostPort.split(':').length > 2) return hostPort;
  return hostPort.split(':')[0];
}

function isLoopbackHost(host) {
  return host === 'localhost' || isLoopbackAddress(host);
}

function isLoopbackAddress(host) {
  const family = host ? net.isIP(host) : 0;
  return family !== 0 && LOOPBACK.check(host, family === 4 ? 'ipv4' : 'ipv6');
}

module.exports = { isLoopback };
