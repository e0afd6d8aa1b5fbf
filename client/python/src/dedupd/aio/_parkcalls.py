"""The park-mode calls of dedupd.aio.Client, a base class of it: the
coroutine forms of dedupd._parkcalls.ParkCalls, with its requests."""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Optional, TypeVar

from google.protobuf.message import Message

from .. import _parkcalls as requests
from .._durations import Seconds
from .._proto.dedup.v1 import stream_pb2

Reply = TypeVar("Reply")


class ParkCalls:
    """StreamService park-mode calls; Client provides _call and _streams."""

    _streams: Any

    def _call(self, rpc: Callable[..., Any], request: Message,
              reply: type[Reply]) -> Awaitable[Reply]:
        raise NotImplementedError

    async def complete_stream_next(self, consumer: str, stream: str, sequence: int,
                                   fencing_token: int, *,
                                   next_lease_ttl: Optional[Seconds] = None
                                   ) -> stream_pb2.CompleteStreamResponse:
        return await self._call(self._streams.CompleteStream, requests.complete_stream_next(
            consumer, stream, sequence, fencing_token, next_lease_ttl),
            stream_pb2.CompleteStreamResponse)

    async def reject_stream_next(self, consumer: str, stream: str, sequence: int,
                                 fencing_token: int, *, reason: str = "", message: str = "",
                                 detail: bytes = b"", next_lease_ttl: Optional[Seconds] = None
                                 ) -> stream_pb2.RejectStreamResponse:
        return await self._call(self._streams.RejectStream, requests.reject_stream_next(
            consumer, stream, sequence, fencing_token, reason, message, detail, next_lease_ttl),
            stream_pb2.RejectStreamResponse)

    async def extend_stream_lease(self, consumer: str, stream: str, sequence: int,
                                  fencing_token: int,
                                  lease_ttl: Optional[Seconds] = None) -> stream_pb2.Stream:
        return (await self._call(self._streams.ExtendStreamLease, requests.extend_stream_lease(
            consumer, stream, sequence, fencing_token, lease_ttl),
            stream_pb2.ExtendStreamLeaseResponse)).stream

    async def claim_parked(self, consumer: str, stream: str = "", *,
                           lease_ttl: Optional[Seconds] = None,
                           owner: str = "") -> stream_pb2.ClaimParkedResponse:
        return await self._call(self._streams.ClaimParked, requests.claim_parked(
            consumer, stream, lease_ttl, owner), stream_pb2.ClaimParkedResponse)
