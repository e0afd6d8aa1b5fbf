"""do_batch(): do() for a whole poll, in three calls however many messages.

One claim_batch claims every key: a stored outcome is replayed without
running fn (Rejected for a stored rejection), and a key another caller
holds gets InProgressTimeout at once (do_batch does not wait: the message
comes back with a later poll). fn runs for the acquired keys on at most
`parallelism` threads while one heartbeat thread extends all their leases
with extend_lease_batch; one finish_batch then records every outcome as
do() records one: Complete, Reject for Terminal, a release for any other
exception. A key named twice runs once; the later one gets the first's
outcome.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import secrets
import threading
from typing import Callable, Optional, Sequence, Union

from ._proto.dedup.v1 import dedup_pb2
from .batch import ClaimItem, ExtendItem, FinishItem
from .client import Client
from .do import RETRYABLE_REASON, Outcome, Result, Terminal, _truncate
from .errors import (AlreadyFinished, DedupError, InProgressTimeout, LeaseLost, RecordNotFound,
                     Rejected)

# fn(key, fencing_token, attempt) for each acquired key.
BatchWork = Callable[[str, int, int], Result]


@dataclasses.dataclass
class BatchOutcome:
    """One message's outcome: outcome as do() returns it, or the exception
    do() would have raised."""
    key: str
    outcome: Optional[Outcome]
    error: Optional[BaseException]


def do_batch(client: Client, consumer: str, items: Sequence[Union[str, tuple[str, bytes]]],
             fn: BatchWork, *, lease_ttl: float = 30.0, owner: str = "", parallelism: int = 8,
             heartbeat_every: Optional[float] = None) -> list[BatchOutcome]:
    """Runs fn at most once per key of a poll to a stored outcome; see the
    module doc. items are keys, or (key, digest) pairs. Returns one
    BatchOutcome per item, in order."""
    owner = f"{_truncate(owner, 200)}#{secrets.token_hex(12)}"
    first: dict[str, int] = {}
    claims: list[ClaimItem] = []
    for it in items:
        key, digest = (it, b"") if isinstance(it, str) else it
        if key not in first:
            first[key] = len(claims)
            claims.append(ClaimItem(key, digest, lease_ttl, owner))
    outcomes: list[BatchOutcome] = [BatchOutcome(c.key, None, None) for c in claims]
    run: list[tuple[int, dedup_pb2.ClaimResponse]] = []
    for i, res in enumerate(client.claim_batch(consumer, claims)):
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
            run.append((i, claim))
    if run:
        _run(client, consumer, [(claims[i].key, c) for i, c in run], fn, lease_ttl,
             parallelism, heartbeat_every or lease_ttl / 3, [outcomes[i] for i, _ in run])
    return [dataclasses.replace(outcomes[first[key]], key=key)
            for key in ((it if isinstance(it, str) else it[0]) for it in items)]


def _run(client: Client, consumer: str, run: list[tuple[str, dedup_pb2.ClaimResponse]],
         fn: BatchWork, lease_ttl: float, parallelism: int, every: float,
         outcomes: list[BatchOutcome]) -> None:
    beat = _BatchHeartbeat(client, consumer, [(k, c.record.fencing_token) for k, c in run],
                           lease_ttl, every)
    results: list[tuple[Result, Optional[BaseException]]] = []

    def work(key: str, claim: dedup_pb2.ClaimResponse) -> tuple[Result, Optional[BaseException]]:
        try:
            return fn(key, claim.record.fencing_token, claim.record.attempts), None
        except Exception as e:  # recorded below as do() records it
            return None, e
        finally:
            beat.finished(key)

    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
            results = list(pool.map(lambda kc: work(*kc), run))
    finally:
        beat.stop()
    finish: list[FinishItem] = []
    for (key, claim), (result, err) in zip(run, results):
        token = claim.record.fencing_token
        if err is None:
            data = (b"" if result is None else result.encode("utf-8") if isinstance(result, str)
                    else bytes(result))
            finish.append(FinishItem(key, token, result=data))
        elif isinstance(err, Terminal):
            finish.append(FinishItem(key, token, rejection=dedup_pb2.Rejection(
                reason=err.reason, message=err.message, detail=err.detail)))
        else:
            finish.append(FinishItem(key, token, rejection=dedup_pb2.Rejection(
                reason=RETRYABLE_REASON, message=_truncate(f"{type(err).__name__}: {err}", 4096),
                retryable=True)))
    try:
        answers = client.finish_batch(consumer, finish)
    except DedupError as whole:
        for out, (_, err) in zip(outcomes, results):
            out.error = err or whole
        return
    for out, (_, err), ans in zip(outcomes, results, answers):
        lost = beat.lost.get(out.key)
        if err is None:
            if ans.error is not None:
                out.error = lost or ans.error
            else:
                assert ans.value is not None
                out.outcome = Outcome(ans.value.result, ans.value, replayed=False)
        elif isinstance(err, Terminal) and ans.error is None and ans.value is not None:
            rejected = Rejected(ans.value, replayed=False)
            rejected.__cause__ = err
            out.error = rejected
        else:
            out.error = err  # fn's own error: the key was released (or its lease is gone)


class _BatchHeartbeat:
    """Extends the leases of the keys still running every `every` seconds,
    in one extend_lease_batch; a key whose lease is gone is dropped and its
    error kept in lost."""

    def __init__(self, client: Client, consumer: str, leases: list[tuple[str, int]],
                 lease_ttl: float, every: float) -> None:
        self.lost: dict[str, DedupError] = {}
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
            try:
                answers = client.extend_lease_batch(
                    consumer, [ExtendItem(k, t, lease_ttl) for k, t in running])
            except DedupError:
                continue  # transient: the next beat tries again within the lease
            for (key, _), ans in zip(running, answers):
                if isinstance(ans.error, (LeaseLost, AlreadyFinished, RecordNotFound)):
                    self.lost[key] = ans.error
                    self.finished(key)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()
