"""do_batch(): dedupd.do_batch on asyncio. The planning of the claims, the
sorting of their answers, what each fn's ending records and the mapping of
the finish_batch answers are dedupd.dobatch's; fn runs as at most
`parallelism` concurrent coroutines."""

from __future__ import annotations

import asyncio
import time
from typing import Awaitable, Optional, Sequence, Union

from .._callbacks import BatchCall
from .._proto.dedup.v1 import dedup_pb2
from ..attempt import Found, Result, Step
from ..do import unique_owner
from ..dobatch import (BatchOutcome, Item, finish_failed, in_item_order, plan_claims,
                       raise_process_ending, record_answers, sort_claims, to_finish)
from ..errors import DedupError
from ..lease import Lease
from ._attempt import run_attempt
from ._client import Client
from ._lease import BatchHeartbeat

# fn(key, fencing_token, attempt[, record=][, lease=]) for each acquired key.
BatchWork = BatchCall[Union[Result, Awaitable[Result]]]

# settle(key, fencing_token, attempt[, record=][, lease=]).
BatchSettle = BatchCall[Union[Found, Awaitable[Found]]]


async def do_batch(client: Client, consumer: str, items: Sequence[Item], fn: BatchWork, *,
                   lease_ttl: float = 30.0, owner: str = "", parallelism: int = 8,
                   heartbeat_every: Optional[float] = None,
                   settle: Optional[BatchSettle] = None) -> list[BatchOutcome]:
    """dedupd.do_batch, awaited: one claim_batch, fn for each acquired key
    (at most `parallelism` at once), one finish_batch."""
    owner = unique_owner(owner)
    first, claims = plan_claims(items, lease_ttl, owner)
    sent = time.monotonic()
    outcomes, run = sort_claims(consumer, claims, await client.claim_batch(consumer, claims),
                                owner, sent, lease_ttl)
    if run:
        await _run(client, consumer, [(claims[i].key, lease, rec) for i, lease, rec in run], fn,
                   settle, lease_ttl, parallelism, heartbeat_every or lease_ttl / 3,
                   [outcomes[i] for i, _, _ in run])
    return in_item_order(items, first, outcomes)


async def _run(client: Client, consumer: str, run: list[tuple[str, Lease, dedup_pb2.Record]],
               fn: BatchWork, settle: Optional[BatchSettle], lease_ttl: float, parallelism: int,
               every: float, outcomes: list[BatchOutcome]) -> None:
    beat = BatchHeartbeat(client, consumer, [(k, lease) for k, lease, _ in run], lease_ttl, every)
    gate = asyncio.Semaphore(max(1, parallelism))

    async def work(key: str, lease: Lease, record: dedup_pb2.Record) -> Step:
        async with gate:
            try:
                return await run_attempt(fn, settle, (key, lease.token, record.attempts),
                                         {"record": record, "lease": lease},
                                         retaken=record.attempts > 1)
            finally:
                beat.finished(key)

    try:
        steps = list(await asyncio.gather(*(work(*klr) for klr in run)))
    finally:
        await beat.stop()
    finish, recorded = to_finish(run, steps, outcomes)
    if finish:
        try:
            answers = await client.finish_batch(consumer, finish)
        except DedupError as whole:
            finish_failed(recorded, whole)
        else:
            record_answers(recorded, answers)
    raise_process_ending(steps)
