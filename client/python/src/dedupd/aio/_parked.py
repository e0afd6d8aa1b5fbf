"""The chain of parked events and do_parked(), on asyncio: the coroutine
forms of dedupd._streamrun and dedupd.parked, with their rules
(released_action decides each step)."""

from __future__ import annotations

import time
from typing import Any, Optional

from .._proto.dedup.v1 import stream_pb2
from .._streamrun import (RELEASE, UNFINISHED, NoReleasedHandler, ReleasedChain, next_of,
                          released_action)
from ..attempt import Step
from ..do import unique_owner
from ..errors import DedupError
from ..lease import Lease, lease_span
from ..parked import ParkedResult
from ._attempt import run_attempt
from ._client import Client
from ._lease import Heartbeat


async def run_held(client: Client, consumer: str, stream: str, sequence: int, lease: Lease,
                   at: stream_pb2.Stream, lease_ttl: float, fn: Any, settle: Any,
                   args: tuple[Any, ...], keywords: dict[str, Any]) -> Step:
    """dedupd._streamrun.run_held, awaited: settle then fn, while a
    heartbeat task extends the sequence's lease."""
    beat = Heartbeat(client, consumer, stream, lease, lease_ttl, lease_span(at, lease_ttl) / 3,
                     sequence=sequence)
    try:
        return await run_attempt(fn, settle, args, keywords, retaken=True, is_found=bool)
    finally:
        await beat.stop()


async def run_released(client: Client, consumer: str, st: stream_pb2.Stream,
                       ev: Optional[stream_pb2.ParkedEvent], sent: float, lease_ttl: float,
                       fn: Any, settle: Any) -> ReleasedChain:
    """dedupd._streamrun.run_released, awaited."""
    chain = ReleasedChain(stream=st)
    while ev is not None:
        name, seq = ev.stream or st.stream, ev.sequence
        lease = Lease(ev.fencing_token, sent + lease_span(st, lease_ttl))
        if fn is None:
            return await _leave(client, consumer, chain, name, ev,
                                NoReleasedHandler("a parked event came back without park=True"))
        step = await run_held(client, consumer, name, seq, lease, st, lease_ttl, fn, settle,
                              (ev,), {"stream": st, "lease": lease})
        action, why = released_action(step, lease)
        if action == UNFINISHED:
            chain.unfinished, chain.unfinished_error = ev, why
            return chain
        if action == RELEASE:
            assert why is not None
            return await _leave(client, consumer, chain, name, ev, why)
        sent = time.monotonic()
        try:
            if step.terminal is not None:
                t = step.terminal
                resp: Any = await client.reject_stream_next(
                    consumer, name, seq, ev.fencing_token, reason=t.reason, message=t.message,
                    detail=t.detail, next_lease_ttl=lease_ttl)
                chain.rejected.append(seq)
            else:
                resp = await client.complete_stream_next(consumer, name, seq, ev.fencing_token,
                                                         next_lease_ttl=lease_ttl)
        except DedupError as err:
            chain.unfinished, chain.unfinished_error = ev, err
            return chain
        chain.released.append(seq)
        chain.stream, st, ev = resp.stream, resp.stream, next_of(resp)
    return chain


async def _leave(client: Client, consumer: str, chain: ReleasedChain, stream: str,
                 ev: stream_pb2.ParkedEvent, why: BaseException) -> ReleasedChain:
    try:
        chain.stream = await client.release_stream(consumer, stream, ev.sequence, ev.fencing_token)
    except DedupError:
        pass  # it waits for its lease instead
    chain.unfinished, chain.unfinished_error = ev, why
    return chain


async def do_parked(client: Client, consumer: str, fn: Any, *, stream: str = "",
                    lease_ttl: float = 30.0, owner: str = "",
                    settle: Optional[Any] = None) -> ParkedResult:
    """dedupd.do_parked, awaited (fn and settle may be coroutine functions)."""
    sent = time.monotonic()
    resp = await client.claim_parked(consumer, stream, lease_ttl=lease_ttl,
                                     owner=unique_owner(owner))
    if not resp.HasField("event"):
        return ParkedResult(found=False)
    chain = await run_released(client, consumer, resp.stream, resp.event, sent, lease_ttl, fn,
                               settle)
    return ParkedResult(found=True, stream=chain.stream, released=chain.released,
                        rejected=chain.rejected, unfinished=chain.unfinished,
                        unfinished_error=chain.unfinished_error)
