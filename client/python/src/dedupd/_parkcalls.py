"""The park-mode StreamService calls, a base class of Client: the
completions that hand back the next parked event, the lease extension of
a stream's claim, ClaimParked and ListParked; and their requests, built
alike for dedupd.aio's client."""

from __future__ import annotations

from typing import Any, Callable, Optional, TypeVar

from google.protobuf.message import Message

from ._durations import Seconds, duration
from ._proto.dedup.v1 import stream_pb2

Reply = TypeVar("Reply")


def complete_stream_next(consumer: str, stream: str, sequence: int, fencing_token: int,
                         next_lease_ttl: Optional[Seconds]) -> stream_pb2.CompleteStreamRequest:
    return stream_pb2.CompleteStreamRequest(
        consumer=consumer, stream=stream, sequence=sequence, fencing_token=fencing_token,
        next_lease_ttl=duration(next_lease_ttl))


def reject_stream_next(consumer: str, stream: str, sequence: int, fencing_token: int, reason: str,
                       message: str, detail: bytes,
                       next_lease_ttl: Optional[Seconds]) -> stream_pb2.RejectStreamRequest:
    return stream_pb2.RejectStreamRequest(
        consumer=consumer, stream=stream, sequence=sequence, fencing_token=fencing_token,
        reason=reason, message=message, detail=detail, next_lease_ttl=duration(next_lease_ttl))


def extend_stream_lease(consumer: str, stream: str, sequence: int, fencing_token: int,
                        lease_ttl: Optional[Seconds]) -> stream_pb2.ExtendStreamLeaseRequest:
    return stream_pb2.ExtendStreamLeaseRequest(
        consumer=consumer, stream=stream, sequence=sequence, fencing_token=fencing_token,
        lease_ttl=duration(lease_ttl))


def claim_parked(consumer: str, stream: str, lease_ttl: Optional[Seconds],
                 owner: str) -> stream_pb2.ClaimParkedRequest:
    return stream_pb2.ClaimParkedRequest(consumer=consumer, stream=stream,
                                         lease_ttl=duration(lease_ttl), owner=owner)


class ParkCalls:
    """StreamService park-mode calls; Client provides _call and _streams."""

    _streams: Any

    def _call(self, rpc: Callable[..., Any], request: Message, reply: type[Reply]) -> Reply:
        raise NotImplementedError

    def complete_stream_next(self, consumer: str, stream: str, sequence: int, fencing_token: int, *,
                             next_lease_ttl: Optional[Seconds] = None
                             ) -> stream_pb2.CompleteStreamResponse:
        """complete_stream, returning the whole response: .stream, and
        .next (when .HasField("next")) the parked event right after the
        sequence, acquired for the caller with a lease of next_lease_ttl
        (the server default when None)."""
        return self._call(self._streams.CompleteStream, complete_stream_next(
            consumer, stream, sequence, fencing_token, next_lease_ttl),
            stream_pb2.CompleteStreamResponse)

    def reject_stream_next(self, consumer: str, stream: str, sequence: int, fencing_token: int, *,
                           reason: str = "", message: str = "", detail: bytes = b"",
                           next_lease_ttl: Optional[Seconds] = None
                           ) -> stream_pb2.RejectStreamResponse:
        """reject_stream, returning the whole response with .next, as
        complete_stream_next does."""
        return self._call(self._streams.RejectStream, reject_stream_next(
            consumer, stream, sequence, fencing_token, reason, message, detail, next_lease_ttl),
            stream_pb2.RejectStreamResponse)

    def extend_stream_lease(self, consumer: str, stream: str, sequence: int, fencing_token: int,
                            lease_ttl: Optional[Seconds] = None) -> stream_pb2.Stream:
        """Pushes out the lease of the sequence's claim (acquired, or a
        parked event handed out); returns the stream."""
        return self._call(self._streams.ExtendStreamLease, extend_stream_lease(
            consumer, stream, sequence, fencing_token, lease_ttl),
            stream_pb2.ExtendStreamLeaseResponse).stream

    def claim_parked(self, consumer: str, stream: str = "", *,
                     lease_ttl: Optional[Seconds] = None,
                     owner: str = "") -> stream_pb2.ClaimParkedResponse:
        """Acquires a ready parked event of the consumer (of stream, when
        given): .event (when .HasField("event")) with its payload, token
        and lease, and .stream."""
        return self._call(self._streams.ClaimParked, claim_parked(
            consumer, stream, lease_ttl, owner), stream_pb2.ClaimParkedResponse)

    def list_parked(self, consumer: str, stream: str, **page: Any) -> stream_pb2.ListParkedResponse:
        """One page of a stream's parked events, without payloads
        (page_size, page_token)."""
        return self._call(self._streams.ListParked, stream_pb2.ListParkedRequest(
            consumer=consumer, stream=stream, **page), stream_pb2.ListParkedResponse)
