"""ttl_from_policy: a receipt's TTL from the consumer's retention."""

from __future__ import annotations

from .._durations import seconds
from .._proto.dedup.v1 import admin_pb2, admin_pb2_grpc
from ..client import Client


def ttl_from_policy(client: Client, consumer: str) -> float:
    """Reads, once, the consumer's retention of completed records from
    dedupd (the effective policy, server defaults filled in), in seconds:
    the ttl a receipt should have so that it never outlives its record. It
    needs the admin service's permission (an admin token when auth is on).
    Raises the DedupError of a refused call, or ValueError when the policy
    keeps completed records for no time."""
    admin = admin_pb2_grpc.AdminServiceStub(client.channel)
    resp = client._call(admin.GetPolicy, admin_pb2.GetPolicyRequest(consumer=consumer),
                        admin_pb2.GetPolicyResponse)
    ttl = seconds(resp.effective.completed_ttl)
    if ttl <= 0:
        raise ValueError(f"receipts: {consumer!r}'s policy has no completed retention")
    return ttl
