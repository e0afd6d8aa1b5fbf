"""do(): dedupd.do on asyncio. The claim decisions, the waits, what fn's
ending records and the release message are dedupd.do's; only the calls
are awaited, and the heartbeat is a task."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Optional, Union

from .._callbacks import KeyCall
from .._proto.dedup.v1 import dedup_pb2
from ..attempt import Found, Result
from ..do import (RETRYABLE_REASON, Outcome, Waiter, claim_decision, release_message,
                  unique_owner)
from ..errors import DedupError, Rejected
from ..lease import Lease
from ._attempt import run_attempt
from ._client import Client
from ._lease import Heartbeat

# fn(fencing_token, attempt[, record=][, lease=]): a coroutine function
# (or a plain one) returning the result.
Work = KeyCall[Union[Result, Awaitable[Result]]]

# settle(fencing_token, attempt[, record=][, lease=]): as dedupd.do's.
Settle = KeyCall[Union[Found, Awaitable[Found]]]


async def do(client: Client, consumer: str, key: str, fn: Work, *, digest: bytes = b"",
             lease_ttl: float = 30.0, owner: str = "", max_wait: float = 30.0,
             initial_backoff: float = 0.05, max_backoff: float = 2.0,
             heartbeat_every: Optional[float] = None, settle: Optional[Settle] = None) -> Outcome:
    """Runs fn at most once per key to a stored outcome: dedupd.do, awaited
    (see its doc for the arguments, the outcomes and the errors)."""
    waiter = Waiter(max_wait, initial_backoff, max_backoff)
    owner = unique_owner(owner)
    while True:
        sent = time.monotonic()
        resp = await client.claim(consumer, key, digest=digest, lease_ttl=lease_ttl, owner=owner)
        got = claim_decision(resp, owner, sent, lease_ttl)
        if isinstance(got, Outcome):
            return got
        if got is not None:
            return await _run(client, consumer, key, resp.record, got, fn, settle, lease_ttl,
                              heartbeat_every or lease_ttl / 3)
        await asyncio.sleep(waiter.next_wait(resp, f"{consumer}/{key}"))


async def _run(client: Client, consumer: str, key: str, claimed: dedup_pb2.Record, lease: Lease,
               fn: Work, settle: Optional[Settle], lease_ttl: float,
               heartbeat_every: float) -> Outcome:
    token, attempt = lease.token, claimed.attempts
    beat = Heartbeat(client, consumer, key, lease, lease_ttl, heartbeat_every)
    try:
        step = await run_attempt(fn, settle, (token, attempt), {"record": claimed, "lease": lease},
                                 retaken=attempt > 1)
    finally:
        await beat.stop()
    if step.pending is not None:
        # Unknown outcome: record nothing, as a crash would.
        raise step.pending
    if step.terminal is not None:
        t = step.terminal
        record = await client.reject(consumer, key, token, reason=t.reason, message=t.message,
                                     detail=t.detail, retryable=False)
        raise Rejected(record, replayed=False) from t
    if step.release is not None:
        e = step.release
        try:
            await client.reject(consumer, key, token, reason=RETRYABLE_REASON,
                                message=release_message(e), retryable=True)
        except DedupError:
            pass  # the lease runs out anyway; fn's own error matters more
        raise e
    if lease.error is not None:
        raise lease.error
    record = await client.complete(consumer, key, token, step.result)
    return Outcome(result=record.result, record=record, replayed=False, settled=step.settled)
