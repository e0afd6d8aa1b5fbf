"""do_in_order: process a stream's events at most once each, in sequence.

    import dedupd
    res = dedupd.do_in_order(client, "orders", "order-42", event.seq,
                             lambda token: apply_status(event, token),
                             settle=lambda token: status_applied(event))
    if res.duplicate: ...            # processed before: skip

A gap (an earlier event not processed yet) raises SequenceGap, whose
.expected is the sequence the stream wants next: hold the event back or let
it be redelivered. Once acquired, settle runs first, on every acquisition: a
stream keeps no attempt count per event, and a released sequence looks like
a fresh one, so any acquisition may follow a holder that did the effect.
settle returns True when the event's effect happened (the sequence is
completed and fn does not run) and False or None when not. The outcome is
recorded as dedupd.attempt describes: fn (or settle) raising Terminal
rejects the event as poison (the stream moves past it) and raises
StreamRejected; any other Exception from fn releases the claim and
propagates; a settle failure or a process-ending BaseException records
nothing (the claim stays PENDING until its lease runs out) and propagates.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Optional, Union

from ._callbacks import StreamCall
from ._durations import seconds
from ._proto.dedup.v1 import stream_pb2
from .attempt import run_attempt
from .client import Client
from .do import Waiter, unique_owner
from .errors import DedupError
from .lease import Lease, lease_span

# fn(fencing_token[, stream=][, lease=]): apply the event (what it returns
# is ignored: a stream stores no result).
StreamWork = StreamCall[object]

# settle(fencing_token[, stream=][, lease=]): did the event's effect happen?
StreamSettle = StreamCall[Optional[bool]]


@dataclasses.dataclass
class InOrderResult:
    """duplicate is True when the event was at or below the mark and fn did
    not run; settled is True when settle found its effect and fn did not
    run; stream is the stream afterwards."""
    duplicate: bool
    stream: stream_pb2.Stream
    settled: bool = False


class StreamRejected(DedupError):
    """fn raised Terminal: the event was recorded as poison and skipped
    past. stream is the stream afterwards; cause the Terminal."""


def stream_claim_decision(resp: stream_pb2.ClaimStreamResponse, owner: str, sequence: int,
                          sent: float, lease_ttl: float) -> Union[Lease, InOrderResult, None]:
    """What a ClaimStream sent at `sent` answered: the Lease to run fn under
    (acquired, or our own claim whose first reply was lost), the duplicate's
    InOrderResult, or None (another holder: wait)."""
    if resp.outcome == stream_pb2.STREAM_OUTCOME_DUPLICATE:
        return InOrderResult(duplicate=True, stream=resp.stream)
    if resp.outcome == stream_pb2.STREAM_OUTCOME_ACQUIRED:
        return Lease(resp.fencing_token, sent + lease_span(resp.stream, lease_ttl))
    if resp.stream.owner == owner and resp.stream.in_flight == sequence:
        return Lease(resp.stream.fencing_token, sent + seconds(resp.retry_after))
    return None


def do_in_order(client: Client, consumer: str, stream: str, sequence: int, fn: StreamWork, *,
                lease_ttl: float = 30.0, owner: str = "",
                mode: "stream_pb2.StreamMode.ValueType" = stream_pb2.STREAM_MODE_UNSPECIFIED,
                digest: bytes = b"", max_wait: float = 30.0,
                settle: Optional[StreamSettle] = None) -> InOrderResult:
    """Claims sequence, runs settle then fn(fencing_token), records the
    outcome; see the module doc. fn and settle also get stream= (the Stream
    at the claim) and lease= (a dedupd.Lease) when they declare them.
    Choose lease_ttl longer than fn takes: it is not extended."""
    waiter = Waiter(max_wait, 0.05, 2.0)
    owner = unique_owner(owner)
    while True:
        sent = time.monotonic()
        resp = client.claim_stream(consumer, stream, sequence, lease_ttl=lease_ttl, owner=owner,
                                   mode=mode, digest=digest)
        got = stream_claim_decision(resp, owner, sequence, sent, lease_ttl)
        if isinstance(got, InOrderResult):
            return got
        if got is not None:
            lease = got
            break
        time.sleep(waiter.next_wait(resp, f"stream {stream!r}"))
    token = lease.token
    step = run_attempt(fn, settle, (token,), {"stream": resp.stream, "lease": lease},
                       retaken=True, is_found=bool)
    if step.pending is not None:
        raise step.pending  # unknown outcome: nothing recorded, the claim stays PENDING
    if step.terminal is not None:
        t = step.terminal
        st = client.reject_stream(consumer, stream, sequence, token, reason=t.reason,
                                  message=t.message, detail=t.detail)
        raise StreamRejected(f"rejected: {t.reason}: {t.message}", reason="REJECTED",
                             stream=st) from t
    if step.release is not None:
        client.release_stream(consumer, stream, sequence, token)
        raise step.release
    return InOrderResult(duplicate=False, settled=step.settled,
                         stream=client.complete_stream(consumer, stream, sequence, token))
