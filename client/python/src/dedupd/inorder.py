"""do_in_order: process a stream's events at most once each, in sequence.

    import dedupd
    res = dedupd.do_in_order(client, "orders", "order-42", event.seq,
                             lambda token: apply_status(event, token))
    if res.duplicate: ...            # processed before: skip

A gap (an earlier event not processed yet) raises SequenceGap, whose
.expected is the sequence the stream wants next: hold the event back or let
it be redelivered. fn raising Terminal rejects the event as poison (the
stream moves past it) and raises Rejected; any other exception releases the
claim and propagates.
"""

from __future__ import annotations

import dataclasses
import random
import secrets
import time
from typing import Callable

from ._proto.dedup.v1 import stream_pb2
from .client import Client
from .do import Terminal, _truncate
from .errors import DedupError, InProgressTimeout


@dataclasses.dataclass
class InOrderResult:
    """duplicate is True when the event was at or below the mark and fn did
    not run; stream is the stream afterwards."""
    duplicate: bool
    stream: stream_pb2.Stream


class StreamRejected(DedupError):
    """fn raised Terminal: the event was recorded as poison and skipped
    past. stream is the stream afterwards; cause the Terminal."""


def do_in_order(client: Client, consumer: str, stream: str, sequence: int,
                fn: Callable[[int], None], *, lease_ttl: float = 30.0, owner: str = "",
                mode: "stream_pb2.StreamMode.ValueType" = stream_pb2.STREAM_MODE_UNSPECIFIED,
                digest: bytes = b"", max_wait: float = 30.0) -> InOrderResult:
    """Claims sequence, runs fn(fencing_token), completes; see the module
    doc. Choose lease_ttl longer than fn takes: it is not extended."""
    deadline = time.monotonic() + max_wait
    backoff = 0.05
    # A unique owner recognises our own claim whose ACQUIRED reply was lost
    # and retried into IN_PROGRESS, as do() does.
    owner = f"{_truncate(owner, 200)}#{secrets.token_hex(12)}"
    while True:
        resp = client.claim_stream(consumer, stream, sequence, lease_ttl=lease_ttl, owner=owner,
                                   mode=mode, digest=digest)
        if resp.outcome == stream_pb2.STREAM_OUTCOME_DUPLICATE:
            return InOrderResult(duplicate=True, stream=resp.stream)
        if resp.outcome == stream_pb2.STREAM_OUTCOME_ACQUIRED:
            break
        if resp.stream.owner == owner and resp.stream.in_flight == sequence:
            resp.fencing_token = resp.stream.fencing_token
            break
        wait = min(backoff * random.uniform(0.5, 1.0),
                   resp.retry_after.seconds + resp.retry_after.nanos / 1e9)
        if time.monotonic() + wait > deadline:
            raise InProgressTimeout(f"stream {stream!r} still in progress after {max_wait}s",
                                    stream=resp.stream)
        time.sleep(wait)
        backoff = min(2 * backoff, 2.0)
    token = resp.fencing_token
    try:
        fn(token)
    except Terminal as t:
        st = client.reject_stream(consumer, stream, sequence, token, reason=t.reason,
                                  message=t.message, detail=t.detail)
        raise StreamRejected(f"rejected: {t.reason}: {t.message}", reason="REJECTED",
                             stream=st) from t
    except BaseException:
        client.release_stream(consumer, stream, sequence, token)
        raise
    return InOrderResult(duplicate=False,
                         stream=client.complete_stream(consumer, stream, sequence, token))


