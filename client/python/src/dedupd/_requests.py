"""The request of each single-key call, built alike by the blocking client
and the asyncio one (the batch requests are in dedupd.batch)."""

from __future__ import annotations

from typing import Any, Optional

from google.protobuf import duration_pb2

from ._durations import Seconds, duration
from ._proto.dedup.v1 import dedup_pb2, stream_pb2


def claim(consumer: str, key: str, digest: bytes, lease_ttl: Optional[Seconds],
          owner: str, wait: Optional[Seconds] = None) -> dedup_pb2.ClaimRequest:
    return dedup_pb2.ClaimRequest(consumer=consumer, key=key, digest=digest,
                                  lease_ttl=duration(lease_ttl), owner=owner,
                                  wait=wait_duration(wait))


def wait_duration(wait: Optional[Seconds]) -> Optional[duration_pb2.Duration]:
    """The wait field of a claim: none when none is asked or none is left."""
    d = duration(wait)
    if d is None or d.ToNanoseconds() <= 0:
        return None
    return d


def complete(consumer: str, key: str, fencing_token: int,
             result: bytes) -> dedup_pb2.CompleteRequest:
    return dedup_pb2.CompleteRequest(consumer=consumer, key=key, fencing_token=fencing_token,
                                     result=result)


def reject(consumer: str, key: str, fencing_token: int, reason: str, message: str,
           detail: bytes, retryable: bool) -> dedup_pb2.RejectRequest:
    return dedup_pb2.RejectRequest(consumer=consumer, key=key, fencing_token=fencing_token,
                                   reason=reason, message=message, detail=detail,
                                   retryable=retryable)


def lookup(consumer: str, key: str) -> dedup_pb2.LookupRequest:
    return dedup_pb2.LookupRequest(consumer=consumer, key=key)


def extend_lease(consumer: str, key: str, fencing_token: int,
                 lease_ttl: Optional[Seconds]) -> dedup_pb2.ExtendLeaseRequest:
    return dedup_pb2.ExtendLeaseRequest(consumer=consumer, key=key, fencing_token=fencing_token,
                                        lease_ttl=duration(lease_ttl))


def list_records(consumer: str, filters: dict[str, Any]) -> dedup_pb2.ListRecordsRequest:
    return dedup_pb2.ListRecordsRequest(consumer=consumer, **filters)


def claim_stream(consumer: str, stream: str, sequence: int, lease_ttl: Optional[Seconds],
                 owner: str, mode: "stream_pb2.StreamMode.ValueType",
                 digest: bytes, wait: Optional[Seconds] = None, park: bool = False,
                 payload: bytes = b"") -> stream_pb2.ClaimStreamRequest:
    return stream_pb2.ClaimStreamRequest(consumer=consumer, stream=stream, sequence=sequence,
                                         mode=mode, digest=digest, lease_ttl=duration(lease_ttl),
                                         owner=owner, wait=wait_duration(wait), park=park,
                                         payload=payload)


def complete_stream(consumer: str, stream: str, sequence: int,
                    fencing_token: int) -> stream_pb2.CompleteStreamRequest:
    return stream_pb2.CompleteStreamRequest(consumer=consumer, stream=stream, sequence=sequence,
                                            fencing_token=fencing_token)


def reject_stream(consumer: str, stream: str, sequence: int, fencing_token: int, reason: str,
                  message: str, detail: bytes) -> stream_pb2.RejectStreamRequest:
    return stream_pb2.RejectStreamRequest(consumer=consumer, stream=stream, sequence=sequence,
                                          fencing_token=fencing_token, reason=reason,
                                          message=message, detail=detail)


def release_stream(consumer: str, stream: str, sequence: int,
                   fencing_token: int) -> stream_pb2.ReleaseStreamRequest:
    return stream_pb2.ReleaseStreamRequest(consumer=consumer, stream=stream, sequence=sequence,
                                           fencing_token=fencing_token)


def get_stream(consumer: str, stream: str) -> stream_pb2.GetStreamRequest:
    return stream_pb2.GetStreamRequest(consumer=consumer, stream=stream)


def list_streams(consumer: str, filters: dict[str, Any]) -> stream_pb2.ListStreamsRequest:
    return stream_pb2.ListStreamsRequest(consumer=consumer, **filters)


def lookup_batch(consumer: str, keys: list[str]) -> dedup_pb2.LookupBatchRequest:
    return dedup_pb2.LookupBatchRequest(consumer=consumer, keys=keys)
