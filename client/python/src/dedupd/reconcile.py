"""reconcile(): settle the claims whose lease ran out.

A PENDING record past its lease belongs to a caller that crashed (or hung)
somewhere between Claim and Complete: its side effect may or may not have
happened. Only the caller's own system can tell, so reconcile() lists those
records (ListRecords with lease_expired), takes each one over with a Claim
(so that the crashed holder, should it wake up, is fenced out), asks
decide(record, token) what happened, and records the answer:

    Complete(result)                    the effect happened; store its result
    Reject(reason, message, detail)     refuse the key for good
    Release(reason, message)            the effect did not happen; let the
                                        next delivery run it again

Or pass settle=, the same function do() takes: settle(token, attempt) (plus
record= and lease= when it declares them) returning the effect's result
completes the key, None releases it, raising Terminal rejects it, and
raising anything else leaves the claim PENDING (nobody knows yet: it is
listed again once this takeover's lease runs out) and propagates.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Optional, Union

from ._callbacks import call
from ._proto.dedup.v1 import dedup_pb2
from .attempt import Found, Terminal, to_bytes
from .client import Client
from .do import Settle
from .errors import DedupError
from .lease import Lease, lease_span


@dataclasses.dataclass
class Complete:
    result: bytes = b""


@dataclasses.dataclass
class Reject:
    reason: str
    message: str = ""
    detail: bytes = b""


@dataclasses.dataclass
class Release:
    reason: str = "RECONCILED"
    message: str = ""


# What decide returns.
Decision = Union[Complete, Reject, Release]


@dataclasses.dataclass
class Settled:
    """What reconcile() did with one expired claim. decision is None when
    the key was no longer up for grabs (record then is what the takeover
    Claim found: someone else finished or took it first)."""
    key: str
    decision: Optional[Decision]
    record: dedup_pb2.Record


# decide(record, fencing_token): what happened to an expired claim's work.
Decide = Callable[[dedup_pb2.Record, int], Decision]


def reconcile(client: Client, consumer: str, decide: Optional[Decide] = None, *,
              settle: Optional[Settle] = None, lease_ttl: float = 30.0,
              owner: str = "reconciler", page_size: int = 100) -> list[Settled]:
    """Settles every expired PENDING claim of consumer; returns [Settled].
    Give decide or settle (see the module doc), not both.

    If decide raises, the claim taken for it is released (so it stays up for
    the next reconciliation or redelivery) and the exception propagates. If
    settle raises (but Terminal), the claim is left PENDING and the
    exception propagates.
    """
    check_decide_or_settle(decide, settle)
    settled: list[Settled] = []
    for expired in client.iter_records(consumer, lease_expired=True, page_size=page_size):
        sent = time.monotonic()
        claim = client.claim(consumer, expired.key, digest=expired.digest,
                             lease_ttl=lease_ttl, owner=owner)
        if claim.outcome != dedup_pb2.OUTCOME_ACQUIRED:
            settled.append(Settled(expired.key, None, claim.record))
            continue
        if settle is not None:
            lease = Lease(claim.fencing_token, sent + lease_span(claim.record, lease_ttl))
            settled.append(_settle(client, consumer, claim, _deciding(settle, lease),
                                   leave_pending=True))
        else:
            assert decide is not None
            settled.append(_settle(client, consumer, claim, decide, leave_pending=False))
    return settled


def _deciding(settle: Settle, lease: Lease) -> Decide:
    """decide for settle: its answer as a Decision."""
    def decide(record: dedup_pb2.Record, token: int) -> Decision:
        try:
            found = call(settle, (token, record.attempts), {"record": record, "lease": lease})
        except Terminal as t:
            return terminal_decision(t)
        return found_decision(found)
    return decide


def check_decide_or_settle(decide: object, settle: object) -> None:
    if (decide is None) == (settle is None):
        raise ValueError("reconcile needs decide or settle, not both")


def found_decision(found: Found) -> Decision:
    """settle's answer as a Decision: complete with the effect's result, or
    release the key when it found none."""
    return Release() if found is None else Complete(to_bytes(found))


def terminal_decision(t: Terminal) -> Decision:
    return Reject(t.reason, t.message, t.detail)


def not_a_decision(decision: object) -> TypeError:
    return TypeError(f"decide must return Complete, Reject or Release, not {decision!r}")


def _settle(client: Client, consumer: str, claim: dedup_pb2.ClaimResponse,
            decide: Decide, leave_pending: bool) -> Settled:
    key, token = claim.record.key, claim.fencing_token
    try:
        decision = decide(claim.record, token)
    except BaseException:
        if leave_pending:
            raise  # unknown outcome: the claim is listed again after its lease
        try:
            client.reject(consumer, key, token, reason="RECONCILE_FAILED", retryable=True)
        except DedupError:
            pass  # our lease runs out anyway
        raise
    if isinstance(decision, Complete):
        record = client.complete(consumer, key, token, decision.result)
    elif isinstance(decision, Reject):
        record = client.reject(consumer, key, token, reason=decision.reason,
                               message=decision.message, detail=decision.detail)
    elif isinstance(decision, Release):
        record = client.reject(consumer, key, token, reason=decision.reason,
                               message=decision.message, retryable=True)
    else:
        client.reject(consumer, key, token, reason="RECONCILE_FAILED", retryable=True)
        raise not_a_decision(decision)
    return Settled(key, decision, record)
