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
A heartbeat extends the lease while settle and fn run; once it is lost
(lease.lost) the outcome is not recorded and LeaseLost is raised.

With park=True (and payload=, the event as it will come back), an event
that arrives before its turn is parked: dedupd stores it, fn does not run,
and the result has parked=True, so the caller acks its message. A
completion that hands back the next parked event runs released(event) on
it at once (event is the dedup.v1.ParkedEvent: .sequence, .payload,
.fencing_token), after settle_released(event) when given, and so on in
order; the result's released lists them (dedupd._streamrun). A server
without park mode answers SEQUENCE_GAP, raised as ParkUnsupported.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Optional, Union

from ._callbacks import StreamCall
from ._durations import seconds
from ._proto.dedup.v1 import stream_pb2
from ._streamrun import ReleasedChain, next_of, run_held, run_released
from .client import Client
from .do import Waiter, unique_owner
from .errors import DedupError, ParkUnsupported, SequenceGap
from .lease import Lease, lease_span
from .parked import ParkedSettle, ParkedWork

# fn(fencing_token[, stream=][, lease=]): apply the event (what it returns
# is ignored: a stream stores no result).
StreamWork = StreamCall[object]

# settle(fencing_token[, stream=][, lease=]): did the event's effect happen?
StreamSettle = StreamCall[Optional[bool]]


@dataclasses.dataclass
class InOrderResult:
    """duplicate is True when the event was at or below the mark and fn did
    not run; settled is True when settle found its effect and fn did not
    run; parked is True when, with park=True, the event came before its
    turn and dedupd holds it (fn did not run: ack the message); stream is
    the stream afterwards. released, rejected, unfinished and
    unfinished_error say what became of the parked events handed back
    after it (see dedupd._streamrun.ReleasedChain): a failure there is not
    this event's, which is done."""
    duplicate: bool
    stream: stream_pb2.Stream
    settled: bool = False
    parked: bool = False
    released: list[int] = dataclasses.field(default_factory=list)
    rejected: list[int] = dataclasses.field(default_factory=list)
    unfinished: Optional[stream_pb2.ParkedEvent] = None
    unfinished_error: Optional[BaseException] = None


class StreamRejected(DedupError):
    """fn raised Terminal: the event was recorded as poison and skipped
    past. stream is the stream afterwards; cause the Terminal; result the
    InOrderResult, with the parked events run after it (park=True)."""

    result: Optional[InOrderResult] = None


def in_order_result(chain: ReleasedChain, settled: bool = False) -> InOrderResult:
    return InOrderResult(duplicate=False, stream=chain.stream, settled=settled,
                         released=chain.released, rejected=chain.rejected,
                         unfinished=chain.unfinished, unfinished_error=chain.unfinished_error)


def stream_claim_decision(resp: stream_pb2.ClaimStreamResponse, owner: str, sequence: int,
                          sent: float, lease_ttl: float) -> Union[Lease, InOrderResult, None]:
    """What a ClaimStream sent at `sent` answered: the Lease to run fn under
    (acquired, or our own claim whose first reply was lost), the duplicate's
    InOrderResult (or the parked one's), or None (another holder: wait)."""
    if resp.outcome == stream_pb2.STREAM_OUTCOME_DUPLICATE:
        return InOrderResult(duplicate=True, stream=resp.stream)
    if resp.outcome == stream_pb2.STREAM_OUTCOME_PARKED:
        return InOrderResult(duplicate=False, parked=True, stream=resp.stream)
    if resp.outcome == stream_pb2.STREAM_OUTCOME_ACQUIRED:
        return Lease(resp.fencing_token, sent + lease_span(resp.stream, lease_ttl))
    if resp.stream.owner == owner and resp.stream.in_flight == sequence:
        return Lease(resp.stream.fencing_token, sent + seconds(resp.retry_after))
    return None


def do_in_order(client: Client, consumer: str, stream: str, sequence: int, fn: StreamWork, *,
                lease_ttl: float = 30.0, owner: str = "",
                mode: "stream_pb2.StreamMode.ValueType" = stream_pb2.STREAM_MODE_UNSPECIFIED,
                digest: bytes = b"", max_wait: float = 30.0,
                settle: Optional[StreamSettle] = None, park: bool = False, payload: bytes = b"",
                released: Optional[ParkedWork] = None,
                settle_released: Optional[ParkedSettle] = None) -> InOrderResult:
    """Claims sequence, runs settle then fn(fencing_token), records the
    outcome; see the module doc. fn and settle also get stream= (the Stream
    at the claim) and lease= (a dedupd.Lease) when they declare them, and
    so do released and settle_released (park=True, which needs
    released)."""
    if park and released is None:
        raise ValueError("do_in_order(park=True) needs released=, to run the parked events "
                         "that come back")
    waiter = Waiter(max_wait, 0.05, 2.0)
    owner = unique_owner(owner)
    while True:
        sent = time.monotonic()
        try:
            resp = client.claim_stream(consumer, stream, sequence, lease_ttl=lease_ttl,
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
        time.sleep(waiter.next_wait(resp, f"stream {stream!r}"))
    token = lease.token
    step = run_held(client, consumer, stream, sequence, lease, resp.stream, lease_ttl, fn, settle,
                    (token,), {"stream": resp.stream, "lease": lease})
    if step.pending is not None:
        raise step.pending  # unknown outcome: nothing recorded, the claim stays PENDING
    if lease.error is not None:
        raise lease.error  # another caller may hold the event now
    if step.release is not None:
        client.release_stream(consumer, stream, sequence, token)
        raise step.release
    sent = time.monotonic()
    if step.terminal is not None:
        t = step.terminal
        rejected = client.reject_stream_next(consumer, stream, sequence, token, reason=t.reason,
                                             message=t.message, detail=t.detail,
                                             next_lease_ttl=lease_ttl)
        err = StreamRejected(f"rejected: {t.reason}: {t.message}", reason="REJECTED",
                             stream=rejected.stream)
        err.result = in_order_result(run_released(client, consumer, rejected.stream,
                                                  next_of(rejected), sent, lease_ttl, released,
                                                  settle_released))
        raise err from t
    done = client.complete_stream_next(consumer, stream, sequence, token, next_lease_ttl=lease_ttl)
    return in_order_result(run_released(client, consumer, done.stream, next_of(done), sent,
                                        lease_ttl, released, settle_released),
                           settled=step.settled)
