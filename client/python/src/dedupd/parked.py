"""do_parked(): the pickup worker of park mode.

    import dedupd
    while running:
        res = dedupd.do_parked(client, "orders", apply_parked, settle=applied)
        if not res.found:
            time.sleep(1)

A parked event is ready for pickup when the caller it was handed back to
let its lease run out (it crashed, or lost the reply), when it was
released after a failure, or after a gap was skipped. do_parked() takes
one with claim_parked (of one stream, with stream=), runs settle(event)
and then fn(event) on it as do_in_order() runs released=, and goes on with
the parked events each completion hands back, in order. fn and settle get
the dedup.v1.ParkedEvent (.sequence, .payload, .fencing_token, .stream)
and, when they declare them, stream= (the Stream) and lease= (the
dedupd.Lease). The same two functions serve do_in_order(released=,
settle_released=).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Optional, Protocol, TypeVar, Union

from ._proto.dedup.v1 import stream_pb2
from ._streamrun import run_released
from .client import Client
from .do import unique_owner
from .lease import Lease

R = TypeVar("R", covariant=True)


class ParkedPlain(Protocol[R]):
    def __call__(self, event: stream_pb2.ParkedEvent, /) -> R: ...


class ParkedWithStream(Protocol[R]):
    def __call__(self, event: stream_pb2.ParkedEvent, /, *, stream: stream_pb2.Stream) -> R: ...


class ParkedWithLease(Protocol[R]):
    def __call__(self, event: stream_pb2.ParkedEvent, /, *, lease: Lease) -> R: ...


class ParkedWithBoth(Protocol[R]):
    def __call__(self, event: stream_pb2.ParkedEvent, /, *, stream: stream_pb2.Stream,
                 lease: Lease) -> R: ...


ParkedCall = Union[ParkedPlain[R], ParkedWithStream[R], ParkedWithLease[R], ParkedWithBoth[R]]

# fn(event[, stream=][, lease=]): apply a parked event (what it returns is
# ignored). Raising Terminal rejects it as poison.
ParkedWork = ParkedCall[object]

# settle(event[, stream=][, lease=]): did the event's effect happen?
ParkedSettle = ParkedCall[Optional[bool]]


@dataclasses.dataclass
class ParkedResult:
    """found is False when no parked event was ready (nothing ran);
    released, rejected, unfinished and unfinished_error are as in
    InOrderResult, for the event claim_parked took and those after it;
    stream is the stream afterwards (None when nothing was found)."""
    found: bool
    stream: Optional[stream_pb2.Stream] = None
    released: list[int] = dataclasses.field(default_factory=list)
    rejected: list[int] = dataclasses.field(default_factory=list)
    unfinished: Optional[stream_pb2.ParkedEvent] = None
    unfinished_error: Optional[BaseException] = None


def do_parked(client: Client, consumer: str, fn: ParkedWork, *, stream: str = "",
              lease_ttl: float = 30.0, owner: str = "",
              settle: Optional[ParkedSettle] = None) -> ParkedResult:
    """Picks up one ready parked event and the ones after it; see the
    module doc. Raises only claim_parked's errors: failures of the events
    are in the result."""
    sent = time.monotonic()
    resp = client.claim_parked(consumer, stream, lease_ttl=lease_ttl,
                               owner=unique_owner(owner))
    if not resp.HasField("event"):
        return ParkedResult(found=False)
    chain = run_released(client, consumer, resp.stream, resp.event, sent, lease_ttl, fn, settle)
    return ParkedResult(found=True, stream=chain.stream, released=chain.released,
                        rejected=chain.rejected, unfinished=chain.unfinished,
                        unfinished_error=chain.unfinished_error)
