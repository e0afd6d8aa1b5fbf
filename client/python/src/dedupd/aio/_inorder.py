"""do_in_order(): dedupd.do_in_order on asyncio, with its claim decision,
waits and recording rules."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Optional, Union

from .._callbacks import StreamCall
from .._proto.dedup.v1 import stream_pb2
from ..do import Waiter, unique_owner
from ..inorder import InOrderResult, StreamRejected, stream_claim_decision
from ._attempt import run_attempt
from ._client import Client

# fn(fencing_token[, stream=][, lease=]): apply the event.
StreamWork = StreamCall[Union[object, Awaitable[object]]]

# settle(fencing_token[, stream=][, lease=]): did the event's effect happen?
StreamSettle = StreamCall[Union[Optional[bool], Awaitable[Optional[bool]]]]


async def do_in_order(client: Client, consumer: str, stream: str, sequence: int,
                      fn: StreamWork, *, lease_ttl: float = 30.0, owner: str = "",
                      mode: "stream_pb2.StreamMode.ValueType" = stream_pb2.STREAM_MODE_UNSPECIFIED,
                      digest: bytes = b"", max_wait: float = 30.0,
                      settle: Optional[StreamSettle] = None) -> InOrderResult:
    """dedupd.do_in_order, awaited."""
    waiter = Waiter(max_wait, 0.05, 2.0)
    owner = unique_owner(owner)
    while True:
        sent = time.monotonic()
        resp = await client.claim_stream(consumer, stream, sequence, lease_ttl=lease_ttl,
                                         owner=owner, mode=mode, digest=digest)
        got = stream_claim_decision(resp, owner, sequence, sent, lease_ttl)
        if isinstance(got, InOrderResult):
            return got
        if got is not None:
            lease = got
            break
        await asyncio.sleep(waiter.next_wait(resp, f"stream {stream!r}"))
    token = lease.token
    step = await run_attempt(fn, settle, (token,), {"stream": resp.stream, "lease": lease},
                             retaken=True, is_found=bool)
    if step.pending is not None:
        raise step.pending  # unknown outcome: nothing recorded, the claim stays PENDING
    if step.terminal is not None:
        t = step.terminal
        st = await client.reject_stream(consumer, stream, sequence, token, reason=t.reason,
                                        message=t.message, detail=t.detail)
        raise StreamRejected(f"rejected: {t.reason}: {t.message}", reason="REJECTED",
                             stream=st) from t
    if step.release is not None:
        await client.release_stream(consumer, stream, sequence, token)
        raise step.release
    return InOrderResult(duplicate=False, settled=step.settled,
                         stream=await client.complete_stream(consumer, stream, sequence, token))
