"""Batch calls: many keys of one consumer in one call (docs/api.md, Batches).

Each call returns one ItemResult per item, in order, each what the lone call
of that item would have returned: the response (a ClaimResponse or a Record)
or the DedupError it would have raised. A batch is not a transaction. The
exception a batch call itself raises concerns the whole call: the consumer,
the credential, too many items, the server unreachable.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, Optional, Sequence, TypeVar, Union

from ._proto.dedup.v1 import dedup_pb2
from .client import Client, Seconds, duration
from .errors import DedupError, from_status

T = TypeVar("T")


@dataclasses.dataclass
class ItemResult(Generic[T]):
    """One item's answer: value (a ClaimResponse or a Record) or error.
    result_omitted is True when the record's result (or rejection message
    and detail) was left out to keep the reply within 4 MiB: read it with
    Client.lookup."""
    value: Optional[T]
    error: Optional[DedupError]
    result_omitted: bool = False


@dataclasses.dataclass
class ClaimItem:
    """One key of a claim_batch; the fields of Client.claim."""
    key: str
    digest: bytes = b""
    lease_ttl: Optional[Seconds] = None
    owner: str = ""


@dataclasses.dataclass
class FinishItem:
    """One outcome of a finish_batch: a Complete with result, or, when
    rejection is set, a Reject (dedup_pb2.Rejection(reason=..., retryable=...))."""
    key: str
    fencing_token: int
    result: bytes = b""
    rejection: Optional[dedup_pb2.Rejection] = None


@dataclasses.dataclass
class ExtendItem:
    """One lease of an extend_lease_batch."""
    key: str
    fencing_token: int
    lease_ttl: Optional[Seconds] = None


def claim_batch(client: Client, consumer: str,
                items: Sequence[Union[ClaimItem, str]]) -> list[ItemResult[dedup_pb2.ClaimResponse]]:
    """Claims many keys in one call (a str item is a key with no digest)."""
    req = dedup_pb2.ClaimBatchRequest(consumer=consumer)
    for it in items:
        item = ClaimItem(it) if isinstance(it, str) else it
        req.items.add(key=item.key, digest=item.digest, owner=item.owner,
                      lease_ttl=duration(item.lease_ttl))
    resp: dedup_pb2.ClaimBatchResponse = client._call("ClaimBatch", req)
    return [ItemResult(r.claim if r.HasField("claim") else None, _error(r), r.result_omitted)
            for r in resp.results]


def finish_batch(client: Client, consumer: str,
                 items: Sequence[FinishItem]) -> list[ItemResult[dedup_pb2.Record]]:
    """Records many outcomes in one call."""
    req = dedup_pb2.FinishBatchRequest(consumer=consumer)
    for it in items:
        item = req.items.add(key=it.key, fencing_token=it.fencing_token)
        if it.rejection is not None:
            item.rejection.CopyFrom(it.rejection)
        else:
            item.result = it.result
    return _records(client._call("FinishBatch", req))


def extend_lease_batch(client: Client, consumer: str,
                       items: Sequence[ExtendItem]) -> list[ItemResult[dedup_pb2.Record]]:
    """Extends many leases in one call: the heartbeat of a whole poll."""
    req = dedup_pb2.ExtendLeaseBatchRequest(consumer=consumer)
    for it in items:
        req.items.add(key=it.key, fencing_token=it.fencing_token, lease_ttl=duration(it.lease_ttl))
    return _records(client._call("ExtendLeaseBatch", req))


def lookup_batch(client: Client, consumer: str,
                 keys: Sequence[str]) -> list[ItemResult[dedup_pb2.Record]]:
    """Reads many records in one call; a key with none has RecordNotFound."""
    return _records(client._call("LookupBatch", dedup_pb2.LookupBatchRequest(
        consumer=consumer, keys=list(keys))))


def _records(resp: Any) -> list[ItemResult[dedup_pb2.Record]]:
    return [ItemResult(r.record if r.HasField("record") else None, _error(r), r.result_omitted)
            for r in resp.results]


def _error(result: Any) -> Optional[DedupError]:
    return from_status(result.error) if result.HasField("error") else None
