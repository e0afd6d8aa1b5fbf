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
from typing import Optional

from ._callbacks import KeyCall
from ._durations import seconds
from ._proto.dedup.v1 import dedup_pb2
from .attempt import Found, Result, Terminal, run_attempt
from .client import Client
from .errors import DedupError, InProgressTimeout, Rejected
from .lease import Heartbeat, Lease, lease_span

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
    deadline = time.monotonic() + max_wait
    backoff = initial_backoff
    # A unique owner lets do() recognise its own claim whose ACQUIRED reply
    # was lost and retried into IN_PROGRESS (as the Go client does).
    owner = f"{_truncate(owner, 200)}#{secrets.token_hex(12)}"
    while True:
        sent = time.monotonic()
        resp = client.claim(consumer, key, digest=digest, lease_ttl=lease_ttl, owner=owner,
                            wait=deadline - sent)
        if resp.outcome == dedup_pb2.OUTCOME_IN_PROGRESS and resp.record.owner == owner:
            lease = Lease(resp.record.fencing_token, sent + seconds(resp.retry_after))
            return _run(client, consumer, key, resp.record, lease, fn, settle, lease_ttl,
                        heartbeat_every or lease_ttl / 3)
        if resp.outcome == dedup_pb2.OUTCOME_ACQUIRED:
            lease = Lease(resp.fencing_token, sent + lease_span(resp.record, lease_ttl))
            return _run(client, consumer, key, resp.record, lease, fn, settle, lease_ttl,
                        heartbeat_every or lease_ttl / 3)
        if resp.outcome == dedup_pb2.OUTCOME_COMPLETED:
            return Outcome(result=resp.record.result, record=resp.record, replayed=True)
        if resp.outcome == dedup_pb2.OUTCOME_REJECTED:
            raise Rejected(resp.record, replayed=True)
        if resp.outcome != dedup_pb2.OUTCOME_IN_PROGRESS:
            raise DedupError(f"unexpected claim outcome {resp.outcome}", record=resp.record)
        wait = random.uniform(backoff / 2, backoff)
        if resp.HasField("retry_after"):
            wait = min(wait, seconds(resp.retry_after))
        if time.monotonic() + wait > deadline:
            raise InProgressTimeout(
                f"{consumer}/{key} still in progress after {max_wait}s", record=resp.record)
        time.sleep(wait)
        backoff = min(backoff * 2, max_backoff)


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
                          message=_truncate(f"{type(e).__name__}: {e}", 4096), retryable=True)
        except DedupError:
            pass  # the lease runs out anyway; fn's own error matters more
        raise e
    if lease.error is not None:
        raise lease.error
    record = client.complete(consumer, key, token, step.result)
    return Outcome(result=record.result, record=record, replayed=False, settled=step.settled)


def _truncate(text: str, limit: int) -> str:
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")
