"""do_in_order(): dedupd.do_in_order on asyncio, with its claim decision,
waits and recording rules."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Awaitable, Optional, Union

from .._callbacks import StreamCall
from .._proto.dedup.v1 import stream_pb2
from .._streamrun import next_of
from ..do import Waiter, unique_owner
from ..errors import ParkUnsupported, SequenceGap
from ..inorder import (InOrderResult, StreamRejected, in_order_result,
                       stream_claim_decision)
from ._client import Client
from ._parked import run_held, run_released

# fn(fencing_token[, stream=][, lease=]): apply the event.
StreamWork = StreamCall[Union[object, Awaitable[object]]]

# settle(fencing_token[, stream=][, lease=]): did the event's effect happen?
StreamSettle = StreamCall[Union[Optional[bool], Awaitable[Optional[bool]]]]


async def do_in_order(client: Client, consumer: str, stream: str, sequence: int,
                      fn: StreamWork, *, lease_ttl: float = 30.0, owner: str = "",
                      mode: "stream_pb2.StreamMode.ValueType" = stream_pb2.STREAM_MODE_UNSPECIFIED,
                      digest: bytes = b"", max_wait: float = 30.0,
                      settle: Optional[StreamSettle] = None, park: bool = False,
                      payload: bytes = b"", released: Optional[Any] = None,
                      settle_released: Optional[Any] = None) -> InOrderResult:
    """dedupd.do_in_order, awaited (released and settle_released, like fn
    and settle, may be coroutine functions)."""
    if park and released is None:
        raise ValueError("do_in_order(park=True) needs released=, to run the parked events "
                         "that come back")
    waiter = Waiter(max_wait, 0.05, 2.0)
    owner = unique_owner(owner)
    while True:
        sent = time.monotonic()
        try:
            resp = await client.claim_stream(consumer, stream, sequence, lease_ttl=lease_ttl,
                                             owner=owner, mode=mode, digest=digest,
                                             wait=waiter.left(), park=park, payload=payload)
        except SequenceGap as gap:
            if park:
                raise ParkUnsupported(f"a claim with park of {stream!r} #{sequence} was answered "
                                      "SEQUENCE_GAP: the server does not support park mode",
                                      reason=gap.reason, stream=gap.stream) from gap
            raise
        got = stream_claim_decision(resp, owner, sequence, sent, lease_ttl)
        if isinstance(got, InOrderResult):
            return got
        if got is not None:
            lease = got
            break
        await asyncio.sleep(waiter.next_wait(resp, f"stream {stream!r}"))
    token = lease.token
    step = await run_held(client, consumer, stream, sequence, lease, resp.stream, lease_ttl, fn,
                          settle, (token,), {"stream": resp.stream, "lease": lease})
    if step.pending is not None:
        raise step.pending  # unknown outcome: nothing recorded, the claim stays PENDING
    if lease.error is not None:
        raise lease.error  # another caller may hold the event now
    if step.release is not None:
        await client.release_stream(consumer, stream, sequence, token)
        raise step.release
    sent = time.monotonic()
    if step.terminal is not None:
        t = step.terminal
        rejected = await client.reject_stream_next(consumer, stream, sequence, token,
                                                   reason=t.reason, message=t.message,
                                                   detail=t.detail, next_lease_ttl=lease_ttl)
        err = StreamRejected(f"rejected: {t.reason}: {t.message}", reason="REJECTED",
                             stream=rejected.stream)
        err.result = in_order_result(await run_released(client, consumer, rejected.stream,
                                                next_of(rejected), sent, lease_ttl, released,
                                                settle_released))
        raise err from t
    done = await client.complete_stream_next(consumer, stream, sequence, token,
                                             next_lease_ttl=lease_ttl)
    return in_order_result(await run_released(client, consumer, done.stream, next_of(done), sent,
                                      lease_ttl, released, settle_released),
                   settled=step.settled)
