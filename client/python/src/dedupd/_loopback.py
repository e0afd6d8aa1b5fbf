"""Whether a gRPC target names this machine only.

A bearer token may travel in plaintext only where it crosses no network, so
the client checks every address a target can resolve to without DNS. gRPC
targets come in these forms (https://github.com/grpc/grpc/blob/master/doc/naming.md):

    host:port, [v6]:port, host          (the default scheme, dns)
    dns:host:port, dns:///host:port, dns://resolver/host:port
    passthrough:///host:port
    ipv4:addr[:port][,addr[:port]...]   a list: every address must qualify
    ipv6:addr, ipv6:[addr]:port[,...]
    unix:path, unix:///path, unix-abstract:name

A host is loopback when it is exactly "localhost" or an address in
127.0.0.0/8, ::1, or ::ffff:127.0.0.0/104 (IPv4-mapped loopback, which
reaches 127.0.0.1). Any other host name, and any other scheme (xds:,
vsock:, ...), is not: a name could resolve anywhere. This is the rule of
the server and the Go client (internal/loopback), with one addition: behind
an explicit resolver (dns://resolver/...) only an address qualifies, since
that resolver may map even "localhost" anywhere.
"""

from __future__ import annotations

import ipaddress
from typing import Optional


def is_loopback_target(target: str) -> bool:
    """True when every address target names is on this machine."""
    scheme, rest = _split_scheme(target)
    if scheme in ("unix", "unix-abstract"):
        return True
    if scheme in ("dns", "passthrough"):
        if "," in rest:
            return False  # one host only; a list here is malformed
        if rest.startswith("//"):  # dns://[resolver]/host:port
            slash = rest.find("/", 2)
            if slash < 0:
                return False
            resolver, rest = rest[2:slash], rest[slash + 1:]
            if resolver:
                # Another resolver may map any name anywhere: addresses only.
                return _is_loopback_address(_host_of(rest))
        return _is_loopback_host(_host_of(rest))
    if scheme in ("ipv4", "ipv6"):
        addresses = rest.lstrip("/").split(",")
        return all(_is_loopback_address(_host_of(a)) for a in addresses)
    return False


def _split_scheme(target: str) -> tuple[str, str]:
    """(scheme, rest); a target without a known scheme is dns's."""
    head, sep, rest = target.partition(":")
    if sep and head in ("dns", "passthrough", "ipv4", "ipv6", "unix", "unix-abstract"):
        return head, rest
    if sep and head.isalpha() and rest.startswith("//"):
        return head, rest  # some other URI scheme, e.g. xds:///name
    return "dns", target


def _host_of(hostport: str) -> Optional[str]:
    """The host of host, host:port, [v6] or [v6]:port; None if malformed."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0 or not (hostport[end + 1:] == "" or hostport[end + 1] == ":"):
            return None
        return hostport[1:end]
    if hostport.count(":") > 1:
        return hostport  # a bare IPv6 address, no port
    return hostport.partition(":")[0]


def _is_loopback_host(host: Optional[str]) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    return _is_loopback_address(host)


def _is_loopback_address(host: Optional[str]) -> bool:
    if not host:
        return False
    try:
        addr = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return addr.ipv4_mapped.is_loopback
    return addr.is_loopback
