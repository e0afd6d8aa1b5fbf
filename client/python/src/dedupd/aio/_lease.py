"""The heartbeats of dedupd.aio: asyncio tasks that extend the leases
while fn runs, with dedupd.lease's rules (which answers mean the lease is
gone, how long an extension lasts)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Coroutine, Union

from ..dobatch import note_extensions
from ..batch import ExtendItem
from ..errors import DedupError
from .._proto.dedup.v1 import dedup_pb2, stream_pb2
from ..lease import LEASE_GONE, Lease, lease_span
from ._client import Client


class _Task:
    """An asyncio task stopped by cancelling it."""

    def __init__(self, loop: Coroutine[Any, Any, None]) -> None:
        self._task = asyncio.ensure_future(loop)

    async def stop(self) -> None:
        self._task.cancel()
        # Waits for the task; a cancellation of the caller still propagates.
        await asyncio.gather(self._task, return_exceptions=True)


class Heartbeat(_Task):
    """Extends one lease every `every` seconds until stopped (of a key, or
    with sequence set of that sequence of the stream `key`); an answer that
    the lease is gone ends it and is kept in the Lease."""

    def __init__(self, client: Client, consumer: str, key: str, lease: Lease, lease_ttl: float,
                 every: float, sequence: int = 0) -> None:
        super().__init__(self._beat(client, consumer, key, lease, lease_ttl, every, sequence))

    @staticmethod
    async def _beat(client: Client, consumer: str, key: str, lease: Lease, lease_ttl: float,
                    every: float, sequence: int) -> None:
        while True:
            await asyncio.sleep(every)
            sent = time.monotonic()
            record: Union[dedup_pb2.Record, stream_pb2.Stream]
            try:
                if sequence:
                    record = await client.extend_stream_lease(consumer, key, sequence, lease.token,
                                                              lease_ttl=lease_ttl)
                else:
                    record = await client.extend_lease(consumer, key, lease.token,
                                                       lease_ttl=lease_ttl)
            except LEASE_GONE as err:
                lease._lose(err)
                return
            except DedupError:
                continue  # transient: the next beat tries again within the lease
            lease._extended(sent + lease_span(record, lease_ttl))


class BatchHeartbeat(_Task):
    """Extends the leases of the keys still running every `every` seconds,
    in one extend_lease_batch, as dedupd.do_batch's heartbeat does."""

    def __init__(self, client: Client, consumer: str, leases: list[tuple[str, Lease]],
                 lease_ttl: float, every: float) -> None:
        self._running = dict(leases)
        super().__init__(self._beat(client, consumer, lease_ttl, every))

    def finished(self, key: str) -> None:
        self._running.pop(key, None)

    async def _beat(self, client: Client, consumer: str, lease_ttl: float, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            running = list(self._running.items())
            if not running:
                continue
            sent = time.monotonic()
            try:
                answers = await client.extend_lease_batch(
                    consumer, [ExtendItem(k, lease.token, lease_ttl) for k, lease in running])
            except DedupError:
                continue  # transient: the next beat tries again within the lease
            for key in note_extensions(running, answers, sent, lease_ttl):
                self.finished(key)
