"""reconcile(): dedupd.reconcile on asyncio; decide and settle may be
coroutine functions. What each answer records is dedupd.reconcile's."""

from __future__ import annotations

import time
from typing import Awaitable, Callable, Optional, Union

from .._proto.dedup.v1 import dedup_pb2
from ..attempt import Terminal
from ..errors import DedupError
from ..lease import Lease, lease_span
from ..reconcile import (Complete, Decision, Reject, Release, Settled, check_decide_or_settle,
                         found_decision, not_a_decision, terminal_decision)
from ._attempt import awaited, call_awaited
from ._client import Client
from ._do import Settle

# decide(record, fencing_token): what happened to an expired claim's work.
Decide = Callable[[dedup_pb2.Record, int], Union[Decision, Awaitable[Decision]]]


async def reconcile(client: Client, consumer: str, decide: Optional[Decide] = None, *,
                    settle: Optional[Settle] = None, lease_ttl: float = 30.0,
                    owner: str = "reconciler", page_size: int = 100) -> list[Settled]:
    """dedupd.reconcile, awaited: settles every expired PENDING claim of
    consumer with decide or settle (not both)."""
    check_decide_or_settle(decide, settle)
    settled: list[Settled] = []
    async for expired in client.iter_records(consumer, lease_expired=True, page_size=page_size):
        sent = time.monotonic()
        claim = await client.claim(consumer, expired.key, digest=expired.digest,
                                   lease_ttl=lease_ttl, owner=owner)
        if claim.outcome != dedup_pb2.OUTCOME_ACQUIRED:
            settled.append(Settled(expired.key, None, claim.record))
            continue
        if settle is not None:
            lease = Lease(claim.fencing_token, sent + lease_span(claim.record, lease_ttl))
            settled.append(await _settle(client, consumer, claim, _deciding(settle, lease),
                                         leave_pending=True))
        else:
            assert decide is not None
            settled.append(await _settle(client, consumer, claim, decide, leave_pending=False))
    return settled


def _deciding(settle: Settle, lease: Lease) -> Decide:
    async def decide(record: dedup_pb2.Record, token: int) -> Decision:
        try:
            found = await call_awaited(settle, (token, record.attempts),
                                       {"record": record, "lease": lease})
        except Terminal as t:
            return terminal_decision(t)
        return found_decision(found)
    return decide


async def _settle(client: Client, consumer: str, claim: dedup_pb2.ClaimResponse,
                  decide: Decide, leave_pending: bool) -> Settled:
    key, token = claim.record.key, claim.fencing_token
    try:
        decision = await awaited(decide(claim.record, token))
    except BaseException:
        if leave_pending:
            raise  # unknown outcome: the claim is listed again after its lease
        try:
            await client.reject(consumer, key, token, reason="RECONCILE_FAILED", retryable=True)
        except DedupError:
            pass  # our lease runs out anyway
        raise
    if isinstance(decision, Complete):
        record = await client.complete(consumer, key, token, decision.result)
    elif isinstance(decision, Reject):
        record = await client.reject(consumer, key, token, reason=decision.reason,
                                     message=decision.message, detail=decision.detail)
    elif isinstance(decision, Release):
        record = await client.reject(consumer, key, token, reason=decision.reason,
                                     message=decision.message, retryable=True)
    else:
        await client.reject(consumer, key, token, reason="RECONCILE_FAILED", retryable=True)
        raise not_a_decision(decision)
    return Settled(key, decision, record)
