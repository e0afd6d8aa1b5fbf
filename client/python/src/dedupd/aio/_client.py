"""Client: the coroutine form of dedupd.Client, on grpc.aio.

Every method takes the arguments of dedupd.Client's, returns the same
protobuf message once awaited, and raises the same DedupError subclass.
The channel rules (retry policy, TLS, where a token may go) and the
requests are dedupd's own (dedupd._channel, dedupd._requests,
dedupd.batch).
"""

from __future__ import annotations

from typing import Any, AsyncIterator, Callable, Optional, Sequence, TypeVar, Union

import grpc
import grpc.aio
from google.protobuf.message import Message

from .. import _requests as requests
from .._channel import bearer_metadata, channel_settings, check_certificate_pair, resolve_token
from .._durations import Seconds
from .._proto.dedup.v1 import dedup_pb2, dedup_pb2_grpc, stream_pb2, stream_pb2_grpc
from ..batch import (ClaimItem, ExtendItem, FinishItem, ItemResult, claim_batch_request,
                     claim_results, extend_lease_batch_request, finish_batch_request,
                     record_results)
from ..errors import from_rpc_error
from ._parkcalls import ParkCalls

Reply = TypeVar("Reply")


class Client(ParkCalls):
    """A grpc.aio connection to one dedupd; the options of dedupd.Client
    (channel= takes a grpc.aio.Channel). Make it inside the event loop that
    uses it (grpc.aio binds a channel to its loop), and close it with
    `await c.close()` or `async with`."""

    def __init__(self, target: Optional[str] = None, *, tls: bool = False,
                 root_certificates: Optional[bytes] = None,
                 certificate_chain: Optional[bytes] = None, private_key: Optional[bytes] = None,
                 token: Optional[str] = None, channel: Optional[grpc.aio.Channel] = None,
                 timeout: Optional[float] = 30.0,
                 options: Sequence[tuple[str, Any]] = ()) -> None:
        token = resolve_token(token)
        check_certificate_pair(certificate_chain, private_key)
        if channel is None:
            if target is None:
                raise ValueError("Client needs a target or a channel")
            settings = channel_settings(
                target, tls=tls, root_certificates=root_certificates,
                certificate_chain=certificate_chain, private_key=private_key, token=token,
                options=options)
            channel = (grpc.aio.secure_channel(target, settings.credentials,
                                               options=settings.options)
                       if settings.credentials else
                       grpc.aio.insecure_channel(target, options=settings.options))
        self.channel: grpc.aio.Channel = channel
        self.timeout = timeout
        self._metadata = bearer_metadata(token)
        self._stub = dedup_pb2_grpc.DedupServiceStub(channel)
        self._streams = stream_pb2_grpc.StreamServiceStub(channel)

    def __repr__(self) -> str:
        # Never shows the token.
        return f"<dedupd.aio.Client channel={self.channel!r}>"

    async def close(self) -> None:
        await self.channel.close()

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _call(self, rpc: Callable[..., Any], request: Message, reply: type[Reply]) -> Reply:
        """Awaits rpc (a bound stub method) with the client's deadline and
        metadata; returns its reply, checked to be of type reply, or raises
        the DedupError of a failed call."""
        try:
            resp = await rpc(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from err
        if not isinstance(resp, reply):
            raise TypeError(f"{type(request).__name__} answered {type(resp).__name__}, "
                            f"not {reply.__name__}")
        return resp

    async def claim(self, consumer: str, key: str, digest: bytes = b"",
                    lease_ttl: Optional[Seconds] = None, owner: str = "",
                    wait: Optional[Seconds] = None) -> dedup_pb2.ClaimResponse:
        return await self._call(self._stub.Claim, requests.claim(
            consumer, key, digest, lease_ttl, owner, wait), dedup_pb2.ClaimResponse)

    async def complete(self, consumer: str, key: str, fencing_token: int,
                       result: bytes = b"") -> dedup_pb2.Record:
        return (await self._call(self._stub.Complete, requests.complete(
            consumer, key, fencing_token, result), dedup_pb2.CompleteResponse)).record

    async def reject(self, consumer: str, key: str, fencing_token: int, reason: str = "",
                     message: str = "", detail: bytes = b"",
                     retryable: bool = False) -> dedup_pb2.Record:
        return (await self._call(self._stub.Reject, requests.reject(
            consumer, key, fencing_token, reason, message, detail, retryable),
            dedup_pb2.RejectResponse)).record

    async def lookup(self, consumer: str, key: str) -> dedup_pb2.Record:
        return (await self._call(self._stub.Lookup, requests.lookup(consumer, key),
                                 dedup_pb2.LookupResponse)).record

    async def extend_lease(self, consumer: str, key: str, fencing_token: int,
                           lease_ttl: Optional[Seconds] = None) -> dedup_pb2.Record:
        return (await self._call(self._stub.ExtendLease, requests.extend_lease(
            consumer, key, fencing_token, lease_ttl), dedup_pb2.ExtendLeaseResponse)).record

    async def list_records(self, consumer: str, **filters: Any) -> dedup_pb2.ListRecordsResponse:
        return await self._call(self._stub.ListRecords, requests.list_records(consumer, filters),
                                dedup_pb2.ListRecordsResponse)

    async def iter_records(self, consumer: str, **filters: Any) -> AsyncIterator[dedup_pb2.Record]:
        """Yields every record ListRecords lists, following the pages."""
        token: str = filters.pop("page_token", "")
        while True:
            page = await self.list_records(consumer, page_token=token, **filters)
            for record in page.records:
                yield record
            token = page.next_page_token
            if not token:
                return

    async def claim_stream(self, consumer: str, stream: str, sequence: int, *,
                           lease_ttl: Optional[Seconds] = None, owner: str = "",
                           mode: "stream_pb2.StreamMode.ValueType" =
                           stream_pb2.STREAM_MODE_UNSPECIFIED,
                           digest: bytes = b"", wait: Optional[Seconds] = None,
                           park: bool = False,
                           payload: bytes = b"") -> stream_pb2.ClaimStreamResponse:
        return await self._call(self._streams.ClaimStream, requests.claim_stream(
            consumer, stream, sequence, lease_ttl, owner, mode, digest, wait, park=park,
            payload=payload),
            stream_pb2.ClaimStreamResponse)

    async def complete_stream(self, consumer: str, stream: str, sequence: int,
                              fencing_token: int) -> stream_pb2.Stream:
        return (await self._call(self._streams.CompleteStream, requests.complete_stream(
            consumer, stream, sequence, fencing_token), stream_pb2.CompleteStreamResponse)).stream

    async def reject_stream(self, consumer: str, stream: str, sequence: int, fencing_token: int,
                            reason: str = "", message: str = "",
                            detail: bytes = b"") -> stream_pb2.Stream:
        return (await self._call(self._streams.RejectStream, requests.reject_stream(
            consumer, stream, sequence, fencing_token, reason, message, detail),
            stream_pb2.RejectStreamResponse)).stream

    async def release_stream(self, consumer: str, stream: str, sequence: int,
                             fencing_token: int) -> stream_pb2.Stream:
        return (await self._call(self._streams.ReleaseStream, requests.release_stream(
            consumer, stream, sequence, fencing_token), stream_pb2.ReleaseStreamResponse)).stream

    async def get_stream(self, consumer: str, stream: str) -> stream_pb2.Stream:
        return (await self._call(self._streams.GetStream, requests.get_stream(consumer, stream),
                                 stream_pb2.GetStreamResponse)).stream

    async def list_streams(self, consumer: str, **filters: Any) -> stream_pb2.ListStreamsResponse:
        return await self._call(self._streams.ListStreams, requests.list_streams(consumer, filters),
                                stream_pb2.ListStreamsResponse)

    async def claim_batch(self, consumer: str, items: Sequence[Union[ClaimItem, str]]
                          ) -> list[ItemResult[dedup_pb2.ClaimResponse]]:
        return claim_results(await self._call(self._stub.ClaimBatch,
                                              claim_batch_request(consumer, items),
                                              dedup_pb2.ClaimBatchResponse))

    async def finish_batch(self, consumer: str,
                           items: Sequence[FinishItem]) -> list[ItemResult[dedup_pb2.Record]]:
        return record_results(await self._call(self._stub.FinishBatch,
                                                finish_batch_request(consumer, items),
                                                dedup_pb2.FinishBatchResponse))

    async def extend_lease_batch(self, consumer: str, items: Sequence[ExtendItem]
                                 ) -> list[ItemResult[dedup_pb2.Record]]:
        return record_results(await self._call(self._stub.ExtendLeaseBatch,
                                                extend_lease_batch_request(consumer, items),
                                                dedup_pb2.ExtendLeaseBatchResponse))

    async def lookup_batch(self, consumer: str,
                           keys: Sequence[str]) -> list[ItemResult[dedup_pb2.Record]]:
        return record_results(await self._call(self._stub.LookupBatch, requests.lookup_batch(
            consumer, list(keys)), dedup_pb2.LookupBatchResponse))
