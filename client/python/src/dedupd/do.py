"""do(): the two-phase pattern done for the caller.

Claim the key; if acquired, run settle (when an earlier holder may have
done the effect) and then fn(fencing_token, attempt) while a heartbeat
keeps the lease alive, and record the outcome as dedupd.attempt describes:
Complete with what fn (or settle) returned, Reject for Terminal, a
retryable release for any other Exception, nothing for a settle failure or
a process-ending BaseException (the claim stays PENDING, as after a
crash). A stored outcome is replayed without running fn. While another
caller holds the key, do() waits up to max_wait seconds: each claim asks
the server to wait for the holder's outcome (wait=), and a claim answered
IN_PROGRESS sooner (a server without waiting, or past its bounds) is
repeated with jittered exponential backoff, never past the holder's lease
(retry_after).
"""

from __future__ import annotations

import dataclasses
import random
import secrets
import time
from typing import Optional, Union

from ._callbacks import KeyCall
from ._durations import seconds
from ._proto.dedup.v1 import dedup_pb2, stream_pb2
from .attempt import Found, Result, Terminal, run_attempt
from .client import Client
from .errors import DedupError, InProgressTimeout, Rejected
from .lease import Heartbeat, Lease, lease_span, lease_start

__all__ = ["do", "Outcome", "Terminal", "Result", "Work", "Settle", "RETRYABLE_REASON"]

# The reason of the release after fn raised an Exception other than
# Terminal; the message names the exception. The Go and Node clients use
# the same.
RETRYABLE_REASON = "RETRYABLE_ERROR"


@dataclasses.dataclass
class Outcome:
    """A completed key: result is the stored result; replayed is True when
    it was stored by an earlier call and fn did not run this time; settled
    is True when settle found the effect of an earlier holder, this call
    stored its result, and fn did not run."""
    result: bytes
    record: dedup_pb2.Record
    replayed: bool
    settled: bool = False


# fn(fencing_token, attempt[, record=][, lease=]): the work, run at most
# once to a stored outcome.
Work = KeyCall[Result]

# settle(fencing_token, attempt[, record=][, lease=]): did an earlier
# holder do the effect? Its result, or None.
Settle = KeyCall[Found]


def do(client: Client, consumer: str, key: str, fn: Work, *, digest: bytes = b"",
       lease_ttl: float = 30.0, owner: str = "", max_wait: float = 30.0,
       initial_backoff: float = 0.05, max_backoff: float = 2.0,
       heartbeat_every: Optional[float] = None, settle: Optional[Settle] = None) -> Outcome:
    """Runs fn at most once per key to a stored outcome; see the module doc.

    fn(token, attempt) returns the result as bytes (a str is UTF-8 encoded,
    None is empty). Pass token to your own writes where they can be fenced.
    attempt is 1 on the first acquisition; above 1, an earlier holder may
    have done the effect, which is when settle runs. fn and settle also get
    record= (the key's Record at the claim) and lease= (a dedupd.Lease:
    check lease.lost before an effect that cannot be fenced) when they
    declare those keywords.

    settle(token, attempt) looks for the effect in your own system and
    returns its result (complete with it; fn does not run) or None (run
    fn); raising Terminal rejects the key; raising anything else leaves the
    claim PENDING and propagates: nack the message, and settle runs again
    once the lease has run out. reconcile(settle=) takes the same function.

    Returns an Outcome, or raises Rejected (a terminal rejection, fresh or
    replayed), InProgressTimeout, DigestMismatch, LeaseLost (the lease ran
    out and someone took over before fn finished), settle's exception, or
    fn's own (after the key was released, for an Exception; with the claim
    left PENDING, for a BaseException such as KeyboardInterrupt).
    heartbeat_every defaults to lease_ttl / 3.
    """
    waiter = Waiter(max_wait, initial_backoff, max_backoff)
    owner = unique_owner(owner)
    while True:
        sent = time.monotonic()
        resp = client.claim(consumer, key, digest=digest, lease_ttl=lease_ttl, owner=owner,
                            wait=waiter.left())
        got = claim_decision(resp, owner, sent, lease_ttl)
        if isinstance(got, Outcome):
            return got
        if got is not None:
            return _run(client, consumer, key, resp.record, got, fn, settle, lease_ttl,
                        heartbeat_every or lease_ttl / 3)
        time.sleep(waiter.next_wait(resp, f"{consumer}/{key}"))


def unique_owner(owner: str) -> str:
    """owner made unique to one call, so that do() recognises its own claim
    whose ACQUIRED reply was lost and retried into IN_PROGRESS (as the Go
    client does)."""
    return f"{_truncate(owner, 200)}#{secrets.token_hex(12)}"


def claim_decision(resp: dedup_pb2.ClaimResponse, owner: str, sent: float,
                   lease_ttl: float) -> Union[Lease, Outcome, None]:
    """What a Claim sent at `sent` (time.monotonic()) answered: the Lease to
    run fn under (acquired, or our own claim), the replayed Outcome, or
    None (another holder: wait). Raises Rejected for a stored rejection."""
    if resp.outcome == dedup_pb2.OUTCOME_IN_PROGRESS and resp.record.owner == owner:
        return Lease(resp.record.fencing_token, sent + seconds(resp.retry_after))
    if resp.outcome == dedup_pb2.OUTCOME_ACQUIRED:
        span = lease_span(resp.record, lease_ttl)
        return Lease(resp.fencing_token, lease_start(sent, time.monotonic(), span) + span)
    if resp.outcome == dedup_pb2.OUTCOME_COMPLETED:
        return Outcome(result=resp.record.result, record=resp.record, replayed=True)
    if resp.outcome == dedup_pb2.OUTCOME_REJECTED:
        raise Rejected(resp.record, replayed=True)
    if resp.outcome != dedup_pb2.OUTCOME_IN_PROGRESS:
        raise DedupError(f"unexpected claim outcome {resp.outcome}", record=resp.record)
    return None


class Waiter:
    """The waits between claims of a key another caller holds, up to
    max_wait seconds in all: each claim asks the server to wait for what is
    left (left()), and one answered IN_PROGRESS sooner (a server without
    waiting, or past its bounds) is followed by jittered exponential
    backoff, never past the holder's lease (retry_after)."""

    def __init__(self, max_wait: float, initial_backoff: float, max_backoff: float) -> None:
        self._deadline = time.monotonic() + max_wait
        self._max_wait = max_wait
        self._backoff = initial_backoff
        self._max_backoff = max_backoff

    def left(self) -> float:
        """The seconds left of max_wait: the wait a claim asks the server for."""
        return self._deadline - time.monotonic()

    def next_wait(self, resp: Union[dedup_pb2.ClaimResponse, stream_pb2.ClaimStreamResponse],
                  what: str) -> float:
        """The seconds to wait before the next claim; raises
        InProgressTimeout (with the record or stream resp found) once
        max_wait would be passed."""
        wait = random.uniform(self._backoff / 2, self._backoff)
        if resp.HasField("retry_after"):
            wait = min(wait, seconds(resp.retry_after))
        if time.monotonic() + wait > self._deadline:
            message = f"{what} still in progress after {self._max_wait}s"
            if isinstance(resp, stream_pb2.ClaimStreamResponse):
                raise InProgressTimeout(message, stream=resp.stream)
            raise InProgressTimeout(message, record=resp.record)
        self._backoff = min(self._backoff * 2, self._max_backoff)
        return wait


def _run(client: Client, consumer: str, key: str, claimed: dedup_pb2.Record, lease: Lease,
         fn: Work, settle: Optional[Settle], lease_ttl: float, heartbeat_every: float) -> Outcome:
    token, attempt = lease.token, claimed.attempts
    beat = Heartbeat(client, consumer, key, lease, lease_ttl, heartbeat_every)
    try:
        step = run_attempt(fn, settle, (token, attempt), {"record": claimed, "lease": lease},
                           retaken=attempt > 1)
    finally:
        beat.stop()
    if step.pending is not None:
        # Unknown outcome: record nothing, as a crash would. The claim stays
        # PENDING until its lease runs out; the next holder runs settle.
        raise step.pending
    if step.terminal is not None:
        t = step.terminal
        record = client.reject(consumer, key, token, reason=t.reason, message=t.message,
                               detail=t.detail, retryable=False)
        raise Rejected(record, replayed=False) from t
    if step.release is not None:
        e = step.release
        try:
            client.reject(consumer, key, token, reason=RETRYABLE_REASON,
                          message=release_message(e), retryable=True)
        except DedupError:
            pass  # the lease runs out anyway; fn's own error matters more
        raise e
    if lease.error is not None:
        raise lease.error
    record = client.complete(consumer, key, token, step.result)
    return Outcome(result=record.result, record=record, replayed=False, settled=step.settled)


def release_message(e: BaseException) -> str:
    """The message of the release after fn raised e: the exception's type
    and text, capped as the server caps a rejection message."""
    return _truncate(f"{type(e).__name__}: {e}", 4096)


def _truncate(text: str, limit: int) -> str:
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")
