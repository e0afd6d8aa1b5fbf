"""do_batch(): do() for a whole poll, in three calls however many messages.

One claim_batch claims every key: a stored outcome is replayed without
running fn (Rejected for a stored rejection), and a key another caller
holds gets InProgressTimeout at once (do_batch does not wait: the message
comes back with a later poll). For the acquired keys, settle (when an
earlier holder may have done the effect) and fn run on at most
`parallelism` threads while one heartbeat thread extends all their leases
with extend_lease_batch; one finish_batch then records every outcome as
do() records one (dedupd.attempt): Complete, Reject for Terminal, a
release for any other Exception, nothing for a settle failure or a
process-ending BaseException (that key stays PENDING). A key named twice
runs once; the later one gets the first's outcome.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
import time
from typing import Optional, Sequence, Union

from ._callbacks import BatchCall
from ._proto.dedup.v1 import dedup_pb2
from .attempt import Found, Result, Step, run_attempt
from .batch import ClaimItem, ExtendItem, FinishItem, ItemResult
from .client import Client
from .do import RETRYABLE_REASON, Outcome, release_message, unique_owner
from .errors import DedupError, InProgressTimeout, Rejected
from .lease import LEASE_GONE, Lease, lease_span

# fn(key, fencing_token, attempt[, record=][, lease=]) for each acquired key.
BatchWork = BatchCall[Result]

# settle(key, fencing_token, attempt[, record=][, lease=]): as do()'s.
BatchSettle = BatchCall[Found]


@dataclasses.dataclass
class BatchOutcome:
    """One message's outcome: outcome as do() returns it, or the exception
    do() would have raised."""
    key: str
    outcome: Optional[Outcome]
    error: Optional[BaseException]


def do_batch(client: Client, consumer: str, items: Sequence[Union[str, tuple[str, bytes]]],
             fn: BatchWork, *, lease_ttl: float = 30.0, owner: str = "", parallelism: int = 8,
             heartbeat_every: Optional[float] = None,
             settle: Optional[BatchSettle] = None) -> list[BatchOutcome]:
    """Runs fn at most once per key of a poll to a stored outcome; see the
    module doc and do(). items are keys, or (key, digest) pairs. Returns
    one BatchOutcome per item, in order. A key whose settle failed, or
    whose fn raised a BaseException that is not an Exception, stays
    PENDING with that exception as its error; the first such
    BaseException is raised once the other outcomes are recorded."""
    owner = unique_owner(owner)
    first, claims = plan_claims(items, lease_ttl, owner)
    sent = time.monotonic()
    outcomes, run = sort_claims(consumer, claims, client.claim_batch(consumer, claims), owner,
                                sent, lease_ttl)
    if run:
        _run(client, consumer, [(claims[i].key, lease, rec) for i, lease, rec in run], fn, settle,
             lease_ttl, parallelism, heartbeat_every or lease_ttl / 3,
             [outcomes[i] for i, _, _ in run])
    return in_item_order(items, first, outcomes)


# An item of do_batch: a key, or a (key, digest) pair.
Item = Union[str, tuple[str, bytes]]

# The keys acquired by a claim_batch: (index in the claims, lease, record).
Acquired = list[tuple[int, Lease, dedup_pb2.Record]]


def plan_claims(items: Sequence[Item], lease_ttl: float,
                owner: str) -> tuple[dict[str, int], list[ClaimItem]]:
    """One ClaimItem per distinct key, and each key's index among them."""
    first: dict[str, int] = {}
    claims: list[ClaimItem] = []
    for it in items:
        key, digest = (it, b"") if isinstance(it, str) else it
        if key not in first:
            first[key] = len(claims)
            claims.append(ClaimItem(key, digest, lease_ttl, owner))
    return first, claims


def sort_claims(consumer: str, claims: list[ClaimItem],
                results: list[ItemResult[dedup_pb2.ClaimResponse]], owner: str, sent: float,
                lease_ttl: float) -> tuple[list[BatchOutcome], Acquired]:
    """The claim_batch's answers (sent at `sent`): a BatchOutcome per claim,
    filled for the keys replayed, refused or held by another caller, and
    the keys acquired (or our own claim whose first reply was lost)."""
    outcomes = [BatchOutcome(c.key, None, None) for c in claims]
    run: Acquired = []
    for i, res in enumerate(results):
        claim = res.value
        if res.error is not None or claim is None:
            outcomes[i].error = res.error
        elif claim.outcome == dedup_pb2.OUTCOME_COMPLETED:
            outcomes[i].outcome = Outcome(claim.record.result, claim.record, replayed=True)
        elif claim.outcome == dedup_pb2.OUTCOME_REJECTED:
            outcomes[i].error = Rejected(claim.record, replayed=True)
        elif claim.outcome == dedup_pb2.OUTCOME_IN_PROGRESS and claim.record.owner != owner:
            outcomes[i].error = InProgressTimeout(
                f"{consumer}/{claims[i].key} is in progress (owner {claim.record.owner})",
                record=claim.record)
        else:  # acquired, or our own claim whose first reply was lost
            ends = sent + lease_span(claim.record, lease_ttl)
            run.append((i, Lease(claim.record.fencing_token, ends), claim.record))
    return outcomes, run


def in_item_order(items: Sequence[Item], first: dict[str, int],
                  outcomes: list[BatchOutcome]) -> list[BatchOutcome]:
    """One BatchOutcome per item: a key named twice gets the first's."""
    return [dataclasses.replace(outcomes[first[key]], key=key)
            for key in ((it if isinstance(it, str) else it[0]) for it in items)]


def _run(client: Client, consumer: str, run: list[tuple[str, Lease, dedup_pb2.Record]],
         fn: BatchWork, settle: Optional[BatchSettle], lease_ttl: float, parallelism: int,
         every: float, outcomes: list[BatchOutcome]) -> None:
    beat = _BatchHeartbeat(client, consumer, [(k, lease) for k, lease, _ in run], lease_ttl, every)

    def work(key: str, lease: Lease, record: dedup_pb2.Record) -> Step:
        try:
            return run_attempt(fn, settle, (key, lease.token, record.attempts),
                               {"record": record, "lease": lease}, retaken=record.attempts > 1)
        finally:
            beat.finished(key)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
            steps = list(pool.map(lambda klr: work(*klr), run))
    finally:
        beat.stop()
    finish, recorded = to_finish(run, steps, outcomes)
    if finish:
        try:
            answers = client.finish_batch(consumer, finish)
        except DedupError as whole:
            finish_failed(recorded, whole)
        else:
            record_answers(recorded, answers)
    raise_process_ending(steps)


# The outcomes to record: the BatchOutcome to fill, the key's Lease, its Step.
Recorded = list[tuple[BatchOutcome, Lease, Step]]


def to_finish(run: list[tuple[str, Lease, dedup_pb2.Record]], steps: list[Step],
              outcomes: list[BatchOutcome]) -> tuple[list[FinishItem], Recorded]:
    """The finish_batch items of the steps whose outcome is known; a key
    whose outcome is unknown gets its exception and stays PENDING."""
    finish: list[FinishItem] = []
    recorded: Recorded = []
    for (key, lease, _), step, out in zip(run, steps, outcomes):
        if step.pending is not None:
            out.error = step.pending  # unknown outcome: nothing is recorded
            continue
        recorded.append((out, lease, step))
        finish.append(_finish_item(key, lease.token, step))
    return finish, recorded


def raise_process_ending(steps: list[Step]) -> None:
    """Raises the first BaseException (not an Exception) fn raised, once
    the other outcomes are recorded."""
    for step in steps:
        if step.pending is not None and not isinstance(step.pending, Exception):
            raise step.pending


def _finish_item(key: str, token: int, step: Step) -> FinishItem:
    if step.terminal is not None:
        t = step.terminal
        return FinishItem(key, token, rejection=dedup_pb2.Rejection(
            reason=t.reason, message=t.message, detail=t.detail))
    if step.release is not None:
        e = step.release
        return FinishItem(key, token, rejection=dedup_pb2.Rejection(
            reason=RETRYABLE_REASON, message=release_message(e), retryable=True))
    return FinishItem(key, token, result=step.result)


def finish_failed(recorded: Recorded, whole: DedupError) -> None:
    """The finish_batch call failed whole: each key gets its own error, or
    the call's."""
    for out, _, step in recorded:
        out.error = step.terminal or step.release or whole


def record_answers(recorded: Recorded, answers: list[ItemResult[dedup_pb2.Record]]) -> None:
    """Each answer of the finish_batch into its BatchOutcome, as do() would
    have raised or returned it."""
    for (out, lease, step), ans in zip(recorded, answers):
        if step.terminal is not None:
            if ans.error is None and ans.value is not None:
                rejected = Rejected(ans.value, replayed=False)
                rejected.__cause__ = step.terminal
                out.error = rejected
            else:
                out.error = step.terminal
        elif step.release is not None:
            out.error = step.release  # fn's own error: the key was released (or its lease is gone)
        elif ans.error is not None or ans.value is None:
            out.error = lease.error or ans.error
        else:
            out.outcome = Outcome(ans.value.result, ans.value, replayed=False,
                                  settled=step.settled)


def note_extensions(running: list[tuple[str, Lease]], answers: list[ItemResult[dedup_pb2.Record]],
                    sent: float, lease_ttl: float) -> list[str]:
    """Each answer of an extend_lease_batch sent at `sent` into its Lease;
    returns the keys whose lease is gone (their answer kept in the Lease)."""
    gone = []
    for (key, lease), ans in zip(running, answers):
        if isinstance(ans.error, LEASE_GONE):
            lease._lose(ans.error)
            gone.append(key)
        elif ans.error is None and ans.value is not None:
            lease._extended(sent + lease_span(ans.value, lease_ttl))
    return gone


class _BatchHeartbeat:
    """Extends the leases of the keys still running every `every` seconds,
    in one extend_lease_batch; a key whose lease is gone is dropped and
    dedupd's answer kept in its Lease."""

    def __init__(self, client: Client, consumer: str, leases: list[tuple[str, Lease]],
                 lease_ttl: float, every: float) -> None:
        self._running = dict(leases)
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(client, consumer, lease_ttl, every),
                                        name="dedupd-batch-heartbeat", daemon=True)
        self._thread.start()

    def finished(self, key: str) -> None:
        with self._lock:
            self._running.pop(key, None)

    def _loop(self, client: Client, consumer: str, lease_ttl: float, every: float) -> None:
        while not self._stopped.wait(every):
            with self._lock:
                running = list(self._running.items())
            if not running:
                continue
            sent = time.monotonic()
            try:
                answers = client.extend_lease_batch(
                    consumer, [ExtendItem(k, lease.token, lease_ttl) for k, lease in running])
            except DedupError:
                continue  # transient: the next beat tries again within the lease
            for key in note_extensions(running, answers, sent, lease_ttl):
                self.finished(key)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
