"""do(): the two-phase pattern done for the caller.

Claim the key; if acquired, run fn(fencing_token, attempt) while a heartbeat
keeps the lease alive, then Complete with what fn returned. If fn raises
Terminal, the key is rejected for good; any other exception releases the key
(a retryable Reject) so that a redelivery runs fn again. A stored outcome is
replayed without running fn. While another caller holds the key, do() waits
with jittered exponential backoff, never past the holder's lease
(retry_after), up to max_wait seconds.
"""

from __future__ import annotations

import dataclasses
import random
import secrets
import threading
import time
from typing import Callable, Optional, Union

from ._proto.dedup.v1 import dedup_pb2
from ._durations import seconds
from .client import Client
from .errors import (AlreadyFinished, DedupError, InProgressTimeout, LeaseLost,
                     Rejected)


# The reason of the release after fn raised anything but Terminal; the
# message names the exception. The Go and Node clients use the same.
RETRYABLE_REASON = "RETRYABLE_ERROR"


class Terminal(Exception):
    """Raise from fn to refuse the work for good: the rejection is stored
    and replayed to every later claim of the key. reason is a short
    machine-readable code (at most 128 bytes), detail opaque bytes."""

    def __init__(self, reason: str, message: str = "", detail: bytes = b"") -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason
        self.message = message
        self.detail = detail


@dataclasses.dataclass
class Outcome:
    """A completed key: result is the stored result; replayed is True when
    it was stored by an earlier call and fn did not run this time."""
    result: bytes
    record: dedup_pb2.Record
    replayed: bool


# What fn may return: the result as bytes, a str (UTF-8 encoded) or None
# (empty).
Result = Union[bytes, bytearray, memoryview, str, None]

# fn(fencing_token, attempt): the work, run at most once to a stored outcome.
Work = Callable[[int, int], Result]


def do(client: Client, consumer: str, key: str, fn: Work, *, digest: bytes = b"",
       lease_ttl: float = 30.0, owner: str = "", max_wait: float = 30.0,
       initial_backoff: float = 0.05, max_backoff: float = 2.0,
       heartbeat_every: Optional[float] = None) -> Outcome:
    """Runs fn at most once per key to a stored outcome; see the module doc.

    fn(token, attempt) returns the result as bytes (a str is UTF-8 encoded,
    None is empty). Pass token to your own writes where they can be fenced.
    Returns an Outcome, or raises Rejected (a terminal rejection, fresh or
    replayed), InProgressTimeout, DigestMismatch, LeaseLost (the lease ran
    out and someone took over before fn finished), or fn's own exception
    after the key was released. heartbeat_every defaults to lease_ttl / 3.
    """
    deadline = time.monotonic() + max_wait
    backoff = initial_backoff
    # A unique owner lets do() recognise its own claim whose ACQUIRED reply
    # was lost and retried into IN_PROGRESS (as the Go client does).
    owner = f"{_truncate(owner, 200)}#{secrets.token_hex(12)}"
    while True:
        resp = client.claim(consumer, key, digest=digest, lease_ttl=lease_ttl, owner=owner)
        if (resp.outcome == dedup_pb2.OUTCOME_IN_PROGRESS and resp.record.owner == owner):
            resp.outcome, resp.fencing_token = dedup_pb2.OUTCOME_ACQUIRED, resp.record.fencing_token
        if resp.outcome == dedup_pb2.OUTCOME_ACQUIRED:
            return _run(client, consumer, key, resp, fn, lease_ttl,
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


def _run(client: Client, consumer: str, key: str, claim: dedup_pb2.ClaimResponse, fn: Work,
         lease_ttl: float, heartbeat_every: float) -> Outcome:
    token, attempt = claim.fencing_token, claim.record.attempts
    beat = _Heartbeat(client, consumer, key, token, lease_ttl, heartbeat_every)
    try:
        try:
            result = fn(token, attempt)
        finally:
            beat.stop()
    except Terminal as t:
        record = client.reject(consumer, key, token, reason=t.reason, message=t.message,
                               detail=t.detail, retryable=False)
        raise Rejected(record, replayed=False) from t
    except BaseException as e:
        try:
            client.reject(consumer, key, token, reason=RETRYABLE_REASON,
                          message=_truncate(f"{type(e).__name__}: {e}", 4096), retryable=True)
        except DedupError:
            pass  # the lease runs out anyway; fn's own error matters more
        raise
    if beat.lost is not None:
        raise beat.lost
    if result is None:
        data = b""
    elif isinstance(result, str):
        data = result.encode("utf-8")
    else:
        data = bytes(result)
    record = client.complete(consumer, key, token, data)
    return Outcome(result=record.result, record=record, replayed=False)


def _truncate(text: str, limit: int) -> str:
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


class _Heartbeat:
    """Extends the lease every `every` seconds until stopped. A LeaseLost or
    AlreadyFinished answer ends it and is kept in lost: the work's outcome
    can no longer be recorded under this token."""

    def __init__(self, client: Client, consumer: str, key: str, token: int, lease_ttl: float,
                 every: float) -> None:
        self.lost: Optional[DedupError] = None
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, args=(client, consumer, key, token, lease_ttl, every),
            name=f"dedupd-heartbeat-{key}", daemon=True)
        self._thread.start()

    def _loop(self, client: Client, consumer: str, key: str, token: int, lease_ttl: float,
              every: float) -> None:
        while not self._stopped.wait(every):
            try:
                client.extend_lease(consumer, key, token, lease_ttl=lease_ttl)
            except (LeaseLost, AlreadyFinished) as err:
                self.lost = err
                return
            except DedupError:
                continue  # transient: the next beat tries again within the lease

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
