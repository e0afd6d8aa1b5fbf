"""The channel rules both Python clients share, the blocking one
(dedupd.Client) and the asyncio one (dedupd.aio.Client): the retry policy,
the TLS credentials, and where a bearer token may go.

UNAVAILABLE means nothing was done (the server never saw the call, or the
store refused it before writing), so gRPC retries it, for both services
(as the Go and Node clients do). Every call is safe to repeat: Complete,
Reject, ExtendLease and their stream forms repeat to the same record, and
a repeated Claim or ClaimStream whose first answer was lost reports the
caller's own claim as IN_PROGRESS, which do() and do_in_order() recognise
by their unique owner.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Optional, Sequence

import grpc

from ._loopback import is_loopback_target

TOKEN_ENV = "DEDUPD_TOKEN"

_RETRIED_SERVICES = ("dedup.v1.DedupService", "dedup.v1.StreamService")
RETRY_SERVICE_CONFIG = json.dumps({
    "methodConfig": [{
        "name": [{"service": service} for service in _RETRIED_SERVICES],
        "retryPolicy": {
            "maxAttempts": 4,
            "initialBackoff": "0.05s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"],
        },
    }],
})

# The per-call metadata that carries the token, or None.
Metadata = Optional[tuple[tuple[str, str], ...]]


@dataclasses.dataclass(frozen=True)
class ChannelSettings:
    """How to open the channel: credentials None means plaintext."""
    credentials: Optional[grpc.ChannelCredentials]
    options: list[tuple[str, Any]]


def resolve_token(token: Optional[str]) -> Optional[str]:
    """The token to send: token, else DEDUPD_TOKEN when token is None
    (token="" sends none)."""
    if token is None:
        return os.environ.get(TOKEN_ENV) or None
    return token or None


def check_certificate_pair(certificate_chain: Optional[bytes],
                           private_key: Optional[bytes]) -> None:
    if (certificate_chain is None) != (private_key is None):
        raise ValueError("a client certificate needs both certificate_chain and private_key")


def channel_settings(target: str, *, tls: bool, root_certificates: Optional[bytes],
                     certificate_chain: Optional[bytes], private_key: Optional[bytes],
                     token: Optional[str], options: Sequence[tuple[str, Any]]) -> ChannelSettings:
    """The credentials and channel arguments of a client of target; raises
    ValueError for a token that would go in plaintext off this machine."""
    opts: list[tuple[str, Any]] = [
        ("grpc.service_config", RETRY_SERVICE_CONFIG), ("grpc.enable_retries", 1)]
    opts.extend(options)
    if tls or root_certificates or certificate_chain:
        return ChannelSettings(grpc.ssl_channel_credentials(
            root_certificates=root_certificates, private_key=private_key,
            certificate_chain=certificate_chain), opts)
    if token and not is_loopback_target(target):
        raise ValueError(f"refusing to send a bearer token in plaintext to {target}: "
                         "pass tls=True or root_certificates")
    return ChannelSettings(None, opts)


def bearer_metadata(token: Optional[str]) -> Metadata:
    # Per-call metadata rather than call credentials: gRPC sends call
    # credentials only over TLS, and a plaintext token is allowed to
    # loopback (channel_settings checks).
    return (("authorization", "Bearer " + token),) if token else None
