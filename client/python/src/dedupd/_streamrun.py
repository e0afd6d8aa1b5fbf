"""One stream event run under its lease, and the chain of parked events a
completion hands back: shared by do_in_order() and do_parked().

A parked event handed back (a completion's `next`, or claim_parked) is
already acquired for the caller. Each one runs settle, then fn, while a
heartbeat extends its lease, and is finished like the delivered event:
complete (or reject, for Terminal), which may hand back the next one, and
so on in order. A failure on a parked event ends the chain and is kept in
the ReleasedChain (unfinished, unfinished_error), not raised: the event
that was delivered is done, and its message should be acked. An event the
chain leaves is released at once for do_parked(), unless its outcome is
unknown (then do_parked() takes it once its lease has run out).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Optional

from ._proto.dedup.v1 import stream_pb2
from .attempt import Step, run_attempt
from .client import Client
from .errors import DedupError
from .lease import Heartbeat, Lease, lease_span


@dataclasses.dataclass
class ReleasedChain:
    """What became of the parked events handed back: released are the
    sequences finished in order (completed, settled, or rejected as
    poison), rejected those of them rejected; unfinished is the event the
    chain could not finish and unfinished_error why (both None when it ran
    out); stream is the stream afterwards."""
    stream: stream_pb2.Stream
    released: list[int] = dataclasses.field(default_factory=list)
    rejected: list[int] = dataclasses.field(default_factory=list)
    unfinished: Optional[stream_pb2.ParkedEvent] = None
    unfinished_error: Optional[BaseException] = None


class NoReleasedHandler(DedupError):
    """A completion handed a parked event back to do_in_order() without
    park=True, which has nothing to run it on: it was released for
    do_parked()."""


def run_held(client: Client, consumer: str, stream: str, sequence: int, lease: Lease,
             at: stream_pb2.Stream, lease_ttl: float, fn: Any, settle: Any,
             args: tuple[Any, ...], keywords: dict[str, Any]) -> Step:
    """Runs settle (on every acquisition: a stream keeps no attempt
    count), then fn, while a heartbeat extends the lease of the
    sequence."""
    every = lease_span(at, lease_ttl) / 3
    beat = Heartbeat(client, consumer, stream, lease, lease_ttl, every, sequence=sequence)
    try:
        return run_attempt(fn, settle, args, keywords, retaken=True, is_found=bool)
    finally:
        beat.stop()


# What the chain does with a parked event once settle and fn ran.
UNFINISHED, RELEASE, FINISH = "unfinished", "release", "finish"


def released_action(step: Step, lease: Lease) -> tuple[str, Optional[BaseException]]:
    """UNFINISHED (the outcome is unknown, or the lease is lost: leave the
    event in flight), RELEASE (fn raised an Exception: release it for
    do_parked) or FINISH (complete, or reject for step.terminal), with the
    error that ends the chain. A process-ending BaseException is raised:
    nothing is recorded, as a crash."""
    if step.pending is not None:
        if not isinstance(step.pending, Exception):
            raise step.pending
        return UNFINISHED, step.pending
    if lease.error is not None:
        return UNFINISHED, lease.error
    if step.release is not None:
        return RELEASE, step.release
    return FINISH, None


def next_of(resp: Any) -> Optional[stream_pb2.ParkedEvent]:
    """The parked event a CompleteStream or RejectStream response hands
    back, or None."""
    return resp.next if resp.HasField("next") else None


def run_released(client: Client, consumer: str, st: stream_pb2.Stream,
                 ev: Optional[stream_pb2.ParkedEvent], sent: float, lease_ttl: float,
                 fn: Any, settle: Any) -> ReleasedChain:
    """Runs fn (and settle) on the parked event ev, acquired by a call
    sent at `sent` (time.monotonic()) that left the stream st, and on each
    one its completion hands back."""
    chain = ReleasedChain(stream=st)
    while ev is not None:
        name, seq = ev.stream or st.stream, ev.sequence
        lease = Lease(ev.fencing_token, sent + lease_span(st, lease_ttl))
        if fn is None:
            return _leave(client, consumer, chain, name, ev,
                          NoReleasedHandler("a parked event came back without park=True"))
        step = run_held(client, consumer, name, seq, lease, st, lease_ttl, fn, settle, (ev,),
                        {"stream": st, "lease": lease})
        action, why = released_action(step, lease)
        if action == UNFINISHED:
            chain.unfinished, chain.unfinished_error = ev, why
            return chain
        if action == RELEASE:
            assert why is not None
            return _leave(client, consumer, chain, name, ev, why)
        sent = time.monotonic()
        try:
            if step.terminal is not None:
                t = step.terminal
                resp: Any = client.reject_stream_next(
                    consumer, name, seq, ev.fencing_token, reason=t.reason, message=t.message,
                    detail=t.detail, next_lease_ttl=lease_ttl)
                chain.rejected.append(seq)
            else:
                resp = client.complete_stream_next(consumer, name, seq, ev.fencing_token,
                                                   next_lease_ttl=lease_ttl)
        except DedupError as err:
            chain.unfinished, chain.unfinished_error = ev, err
            return chain
        chain.released.append(seq)
        chain.stream, st, ev = resp.stream, resp.stream, next_of(resp)
    return chain


def _leave(client: Client, consumer: str, chain: ReleasedChain, stream: str,
           ev: stream_pb2.ParkedEvent, why: BaseException) -> ReleasedChain:
    """Releases a parked event the chain will not finish, so that
    do_parked() can take it at once, and records it as unfinished."""
    try:
        chain.stream = client.release_stream(consumer, stream, ev.sequence, ev.fencing_token)
    except DedupError:
        pass  # it waits for its lease instead
    chain.unfinished, chain.unfinished_error = ev, why
    return chain
