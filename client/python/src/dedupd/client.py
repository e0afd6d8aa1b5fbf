"""Client: thin typed wrappers over every DedupService RPC.

Each method returns the response's protobuf message (dedup.v1.Record, or the
whole ClaimResponse / ListRecordsResponse) and raises a DedupError subclass
instead of grpc.RpcError.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar, Union

import grpc
from google.protobuf.message import Message

from . import _requests as requests
# The channel rules (retry policy, TLS, where a token may go) are shared
# with dedupd.aio.Client; TOKEN_ENV is re-exported under its old name.
from ._channel import (TOKEN_ENV as TOKEN_ENV, bearer_metadata, channel_settings,
                       check_certificate_pair, resolve_token)
from ._proto.dedup.v1 import dedup_pb2, dedup_pb2_grpc, stream_pb2, stream_pb2_grpc
# Re-exported under their old names (dedupd.client.seconds, ...).
from ._durations import Seconds as Seconds, duration as duration, seconds as seconds
from ._parkcalls import ParkCalls
from .batch import (ClaimItem, ExtendItem, FinishItem, ItemResult, claim_batch_request,
                    claim_results, extend_lease_batch_request, finish_batch_request,
                    record_results)
from .errors import from_rpc_error

# The reply type of one RPC, as _call checks it.
Reply = TypeVar("Reply")


class Client(ParkCalls):
    """A connection to one dedupd.

    Client("127.0.0.1:7070") connects without TLS. TLS is on with tls=True
    (system roots), root_certificates=PEM bytes of the CA that signed the
    server's certificate, or certificate_chain + private_key (PEM bytes of a
    client certificate, for mutual TLS). token is sent as "authorization:
    Bearer <token>" with every call; when it is None the DEDUPD_TOKEN
    environment variable is used if set (token="" sends none). A token is
    sent in plaintext only to a target whose every address is loopback
    (127.0.0.0/8, ::1, localhost, a unix socket); to any other without TLS
    the constructor raises ValueError. channel= wraps an existing
    grpc.Channel instead (the token is still added to each call). timeout
    is the per-call deadline in seconds (None: none). options are extra
    gRPC channel arguments.
    """

    def __init__(self, target: Optional[str] = None, *, tls: bool = False,
                 root_certificates: Optional[bytes] = None,
                 certificate_chain: Optional[bytes] = None, private_key: Optional[bytes] = None,
                 token: Optional[str] = None, channel: Optional[grpc.Channel] = None,
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
            channel = (grpc.secure_channel(target, settings.credentials, options=settings.options)
                       if settings.credentials else
                       grpc.insecure_channel(target, options=settings.options))
        self.channel: grpc.Channel = channel
        self.timeout = timeout
        self._metadata = bearer_metadata(token)
        self._stub = dedup_pb2_grpc.DedupServiceStub(channel)
        self._streams = stream_pb2_grpc.StreamServiceStub(channel)

    def __repr__(self) -> str:
        # Never shows the token.
        return f"<dedupd.Client channel={self.channel!r}>"

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, rpc: Callable[..., Any], request: Message, reply: type[Reply]) -> Reply:
        """Calls rpc (a bound stub method, e.g. self._stub.Claim) with the
        client's deadline and metadata; returns its reply, checked to be of
        type reply, or raises the DedupError of a failed call."""
        try:
            resp = rpc(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as err:
            raise from_rpc_error(err) from err
        if not isinstance(resp, reply):
            raise TypeError(f"{type(request).__name__} answered {type(resp).__name__}, "
                            f"not {reply.__name__}")
        return resp

    def claim(self, consumer: str, key: str, digest: bytes = b"",
              lease_ttl: Optional[Seconds] = None, owner: str = "",
              wait: Optional[Seconds] = None) -> dedup_pb2.ClaimResponse:
        """Claims (consumer, key); returns the ClaimResponse (outcome, record,
        fencing_token, retry_after). lease_ttl is seconds or a timedelta.
        wait lets the server hold the call while another caller holds the
        key, until the holder's outcome is stored or its lease runs out (at
        most the server's --max-claim-wait); a server without waiting
        ignores it and answers at once."""
        return self._call(self._stub.Claim, requests.claim(
            consumer, key, digest, lease_ttl, owner, wait), dedup_pb2.ClaimResponse)

    def complete(self, consumer: str, key: str, fencing_token: int,
                 result: bytes = b"") -> dedup_pb2.Record:
        """Stores the result; returns the COMPLETED record."""
        return self._call(self._stub.Complete, requests.complete(
            consumer, key, fencing_token, result), dedup_pb2.CompleteResponse).record

    def reject(self, consumer: str, key: str, fencing_token: int, reason: str = "",
               message: str = "", detail: bytes = b"",
               retryable: bool = False) -> dedup_pb2.Record:
        """Stores a terminal rejection, or with retryable=True releases the
        key for a retry; returns the REJECTED or RELEASED record."""
        return self._call(self._stub.Reject, requests.reject(
            consumer, key, fencing_token, reason, message, detail, retryable),
            dedup_pb2.RejectResponse).record

    def lookup(self, consumer: str, key: str) -> dedup_pb2.Record:
        """Returns the key's record; raises RecordNotFound if it has none."""
        return self._call(self._stub.Lookup, requests.lookup(consumer, key),
                          dedup_pb2.LookupResponse).record

    def extend_lease(self, consumer: str, key: str, fencing_token: int,
                     lease_ttl: Optional[Seconds] = None) -> dedup_pb2.Record:
        """Pushes the lease out to lease_ttl from now; returns the record."""
        return self._call(self._stub.ExtendLease, requests.extend_lease(
            consumer, key, fencing_token, lease_ttl), dedup_pb2.ExtendLeaseResponse).record

    def list_records(self, consumer: str, **filters: Any) -> dedup_pb2.ListRecordsResponse:
        """One page of ListRecords; filters are ListRecordsRequest fields
        (states, key_prefix, lease_expired, page_size, page_token, ...)."""
        return self._call(self._stub.ListRecords,
                          requests.list_records(consumer, filters),
                          dedup_pb2.ListRecordsResponse)

    def iter_records(self, consumer: str, **filters: Any) -> Iterator[dedup_pb2.Record]:
        """Yields every record ListRecords lists, following the pages."""
        token: str = filters.pop("page_token", "")
        while True:
            page = self.list_records(consumer, page_token=token, **filters)
            yield from page.records
            token = page.next_page_token
            if not token:
                return

    # StreamService: events with a sequence number per entity (stream).

    def claim_stream(self, consumer: str, stream: str, sequence: int, *,
                     lease_ttl: Optional[Seconds] = None, owner: str = "",
                     mode: "stream_pb2.StreamMode.ValueType" = stream_pb2.STREAM_MODE_UNSPECIFIED,
                     digest: bytes = b"", wait: Optional[Seconds] = None,
                     park: bool = False,
                     payload: bytes = b"") -> stream_pb2.ClaimStreamResponse:
        """Claims one sequence of a stream; returns the ClaimStreamResponse
        (outcome ACQUIRED, IN_PROGRESS or DUPLICATE, stream, fencing_token,
        retry_after). Raises SequenceGap (with .expected) for an early
        event of a dense stream; with park=True the server stores it with
        payload instead and answers PARKED (the park-mode calls are in
        dedupd._parkcalls). wait is as for claim(): the server answers
        DUPLICATE once the holder finishes the sequence, ACQUIRED once it
        releases it or its lease runs out."""
        return self._call(self._streams.ClaimStream, requests.claim_stream(
            consumer, stream, sequence, lease_ttl, owner, mode, digest, wait, park=park,
            payload=payload),
            stream_pb2.ClaimStreamResponse)

    def complete_stream(self, consumer: str, stream: str, sequence: int,
                        fencing_token: int) -> stream_pb2.Stream:
        """Finishes the sequence and moves the high-water mark to it;
        repeating it is harmless."""
        return self._call(self._streams.CompleteStream, requests.complete_stream(
            consumer, stream, sequence, fencing_token), stream_pb2.CompleteStreamResponse).stream

    def reject_stream(self, consumer: str, stream: str, sequence: int, fencing_token: int,
                      reason: str = "", message: str = "", detail: bytes = b"") -> stream_pb2.Stream:
        """Finishes the sequence as a poison event: the mark moves past it."""
        return self._call(self._streams.RejectStream, requests.reject_stream(
            consumer, stream, sequence, fencing_token, reason, message, detail),
            stream_pb2.RejectStreamResponse).stream

    def release_stream(self, consumer: str, stream: str, sequence: int,
                       fencing_token: int) -> stream_pb2.Stream:
        """Gives the claim up without moving the mark (a retryable failure)."""
        return self._call(self._streams.ReleaseStream, requests.release_stream(
            consumer, stream, sequence, fencing_token), stream_pb2.ReleaseStreamResponse).stream

    def get_stream(self, consumer: str, stream: str) -> stream_pb2.Stream:
        """Returns the stream; raises StreamNotFound if it has no record."""
        return self._call(self._streams.GetStream,
                          requests.get_stream(consumer, stream),
                          stream_pb2.GetStreamResponse).stream

    def list_streams(self, consumer: str, **filters: Any) -> stream_pb2.ListStreamsResponse:
        """One page of ListStreams (lease_expired, page_size, page_token)."""
        return self._call(self._streams.ListStreams,
                          requests.list_streams(consumer, filters),
                          stream_pb2.ListStreamsResponse)

    # Batch calls (docs/api.md, Batches): one ItemResult per item, in order,
    # each what the lone call of that item would have returned or raised.
    # dedupd.batch holds the item and result types and builds the requests.

    def claim_batch(self, consumer: str, items: Sequence[Union[ClaimItem, str]]
                    ) -> list[ItemResult[dedup_pb2.ClaimResponse]]:
        """Claims many keys in one call (a str item is a key with no
        digest)."""
        return claim_results(self._call(self._stub.ClaimBatch,
                                        claim_batch_request(consumer, items),
                                        dedup_pb2.ClaimBatchResponse))

    def finish_batch(self, consumer: str,
                     items: Sequence[FinishItem]) -> list[ItemResult[dedup_pb2.Record]]:
        """Records many outcomes (FinishItem: a Complete, or a Reject) in
        one call."""
        return record_results(self._call(self._stub.FinishBatch,
                                          finish_batch_request(consumer, items),
                                          dedup_pb2.FinishBatchResponse))

    def extend_lease_batch(self, consumer: str,
                           items: Sequence[ExtendItem]) -> list[ItemResult[dedup_pb2.Record]]:
        """Extends many leases in one call: the heartbeat of a whole poll."""
        return record_results(self._call(self._stub.ExtendLeaseBatch,
                                          extend_lease_batch_request(consumer, items),
                                          dedup_pb2.ExtendLeaseBatchResponse))

    def lookup_batch(self, consumer: str,
                     keys: Sequence[str]) -> list[ItemResult[dedup_pb2.Record]]:
        """Reads many records in one call; a key with none has
        RecordNotFound."""
        return record_results(self._call(self._stub.LookupBatch, requests.lookup_batch(
            consumer, list(keys)), dedup_pb2.LookupBatchResponse))
