"""Client: thin typed wrappers over every DedupService RPC.

Each method returns the response's protobuf message (dedup.v1.Record, or the
whole ClaimResponse / ListRecordsResponse) and raises a DedupError subclass
instead of grpc.RpcError.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar, Union

import grpc
from google.protobuf.message import Message

from ._proto.dedup.v1 import dedup_pb2, dedup_pb2_grpc, stream_pb2, stream_pb2_grpc
# Re-exported under their old names (dedupd.client.seconds, ...).
from ._durations import Seconds as Seconds, duration as duration, seconds as seconds
from ._loopback import is_loopback_target
from ._parkcalls import ParkCalls
from .batch import (ClaimItem, ExtendItem, FinishItem, ItemResult, claim_batch_request,
                    claim_results, extend_lease_batch_request, finish_batch_request,
                    record_results)
from .errors import from_rpc_error

# UNAVAILABLE means nothing was done (the server never saw the call, or the
# store refused it before writing), so gRPC retries it, for both services
# (as the Go and Node clients do). Every call is safe to repeat: Complete,
# Reject, ExtendLease and their stream forms repeat to the same record, and
# a repeated Claim or ClaimStream whose first answer was lost reports the
# caller's own claim as IN_PROGRESS, which do() and do_in_order() recognise
# by their unique owner.
_RETRIED_SERVICES = ("dedup.v1.DedupService", "dedup.v1.StreamService")
_RETRY_SERVICE_CONFIG = json.dumps({
    "methodConfig": [{
        "name": [{"service": service} for service in _RETRIED_SERVICES],
        "retryPolicy": {
            "maxAttempts": 4,
            "initialBackoff": "0.05s",
            "maxBackoff": "1s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE"],
        },
    }],
})


# The reply type of one RPC, as _call checks it.
Reply = TypeVar("Reply")

TOKEN_ENV = "DEDUPD_TOKEN"


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
        if token is None:
            token = os.environ.get(TOKEN_ENV) or None
        if (certificate_chain is None) != (private_key is None):
            raise ValueError("a client certificate needs both certificate_chain and private_key")
        if channel is None:
            if target is None:
                raise ValueError("Client needs a target or a channel")
            opts: list[tuple[str, Any]] = [
                ("grpc.service_config", _RETRY_SERVICE_CONFIG), ("grpc.enable_retries", 1)]
            opts.extend(options)
            if tls or root_certificates or certificate_chain:
                creds = grpc.ssl_channel_credentials(
                    root_certificates=root_certificates, private_key=private_key,
                    certificate_chain=certificate_chain)
                channel = grpc.secure_channel(target, creds, options=opts)
            else:
                if token and not is_loopback_target(target):
                    raise ValueError(
                        f"refusing to send a bearer token in plaintext to {target}: "
                        "pass tls=True or root_certificates")
                channel = grpc.insecure_channel(target, options=opts)
        self.channel: grpc.Channel = channel
        self.timeout = timeout
        # Per-call metadata rather than call credentials: gRPC sends call
        # credentials only over TLS, and a plaintext token is allowed to
        # loopback (checked above).
        self._metadata: Optional[tuple[tuple[str, str], ...]] = (
            (("authorization", "Bearer " + token),) if token else None)
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
              lease_ttl: Optional[Seconds] = None, owner: str = "") -> dedup_pb2.ClaimResponse:
        """Claims (consumer, key); returns the ClaimResponse (outcome, record,
        fencing_token, retry_after). lease_ttl is seconds or a timedelta."""
        return self._call(self._stub.Claim, dedup_pb2.ClaimRequest(
            consumer=consumer, key=key, digest=digest, lease_ttl=duration(lease_ttl), owner=owner),
            dedup_pb2.ClaimResponse)

    def complete(self, consumer: str, key: str, fencing_token: int,
                 result: bytes = b"") -> dedup_pb2.Record:
        """Stores the result; returns the COMPLETED record."""
        return self._call(self._stub.Complete, dedup_pb2.CompleteRequest(
            consumer=consumer, key=key, fencing_token=fencing_token, result=result),
            dedup_pb2.CompleteResponse).record

    def reject(self, consumer: str, key: str, fencing_token: int, reason: str = "",
               message: str = "", detail: bytes = b"",
               retryable: bool = False) -> dedup_pb2.Record:
        """Stores a terminal rejection, or with retryable=True releases the
        key for a retry; returns the REJECTED or RELEASED record."""
        return self._call(self._stub.Reject, dedup_pb2.RejectRequest(
            consumer=consumer, key=key, fencing_token=fencing_token, reason=reason,
            message=message, detail=detail, retryable=retryable), dedup_pb2.RejectResponse).record

    def lookup(self, consumer: str, key: str) -> dedup_pb2.Record:
        """Returns the key's record; raises RecordNotFound if it has none."""
        return self._call(self._stub.Lookup, dedup_pb2.LookupRequest(consumer=consumer, key=key),
                          dedup_pb2.LookupResponse).record

    def extend_lease(self, consumer: str, key: str, fencing_token: int,
                     lease_ttl: Optional[Seconds] = None) -> dedup_pb2.Record:
        """Pushes the lease out to lease_ttl from now; returns the record."""
        return self._call(self._stub.ExtendLease, dedup_pb2.ExtendLeaseRequest(
            consumer=consumer, key=key, fencing_token=fencing_token,
            lease_ttl=duration(lease_ttl)), dedup_pb2.ExtendLeaseResponse).record

    def list_records(self, consumer: str, **filters: Any) -> dedup_pb2.ListRecordsResponse:
        """One page of ListRecords; filters are ListRecordsRequest fields
        (states, key_prefix, lease_expired, page_size, page_token, ...)."""
        return self._call(self._stub.ListRecords,
                          dedup_pb2.ListRecordsRequest(consumer=consumer, **filters),
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
                     digest: bytes = b"", park: bool = False,
                     payload: bytes = b"") -> stream_pb2.ClaimStreamResponse:
        """Claims one sequence of a stream; returns the ClaimStreamResponse
        (outcome ACQUIRED, IN_PROGRESS or DUPLICATE, stream, fencing_token,
        retry_after). Raises SequenceGap (with .expected) for an early
        event of a dense stream; with park=True the server stores it with
        payload instead and answers PARKED (the park-mode calls are in
        dedupd._parkcalls)."""
        return self._call(self._streams.ClaimStream, stream_pb2.ClaimStreamRequest(
            consumer=consumer, stream=stream, sequence=sequence, mode=mode, digest=digest,
            lease_ttl=duration(lease_ttl), owner=owner, park=park, payload=payload),
            stream_pb2.ClaimStreamResponse)

    def complete_stream(self, consumer: str, stream: str, sequence: int,
                        fencing_token: int) -> stream_pb2.Stream:
        """Finishes the sequence and moves the high-water mark to it;
        repeating it is harmless."""
        return self._call(self._streams.CompleteStream, stream_pb2.CompleteStreamRequest(
            consumer=consumer, stream=stream, sequence=sequence, fencing_token=fencing_token),
            stream_pb2.CompleteStreamResponse).stream

    def reject_stream(self, consumer: str, stream: str, sequence: int, fencing_token: int,
                      reason: str = "", message: str = "", detail: bytes = b"") -> stream_pb2.Stream:
        """Finishes the sequence as a poison event: the mark moves past it."""
        return self._call(self._streams.RejectStream, stream_pb2.RejectStreamRequest(
            consumer=consumer, stream=stream, sequence=sequence, fencing_token=fencing_token,
            reason=reason, message=message, detail=detail), stream_pb2.RejectStreamResponse).stream

    def release_stream(self, consumer: str, stream: str, sequence: int,
                       fencing_token: int) -> stream_pb2.Stream:
        """Gives the claim up without moving the mark (a retryable failure)."""
        return self._call(self._streams.ReleaseStream, stream_pb2.ReleaseStreamRequest(
            consumer=consumer, stream=stream, sequence=sequence, fencing_token=fencing_token),
            stream_pb2.ReleaseStreamResponse).stream

    def get_stream(self, consumer: str, stream: str) -> stream_pb2.Stream:
        """Returns the stream; raises StreamNotFound if it has no record."""
        return self._call(self._streams.GetStream,
                          stream_pb2.GetStreamRequest(consumer=consumer, stream=stream),
                          stream_pb2.GetStreamResponse).stream

    def list_streams(self, consumer: str, **filters: Any) -> stream_pb2.ListStreamsResponse:
        """One page of ListStreams (lease_expired, page_size, page_token)."""
        return self._call(self._streams.ListStreams,
                          stream_pb2.ListStreamsRequest(consumer=consumer, **filters),
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
        return record_results(self._call(self._stub.LookupBatch, dedup_pb2.LookupBatchRequest(
            consumer=consumer, keys=list(keys)), dedup_pb2.LookupBatchResponse))
