"""Batch calls: many keys of one consumer in one call (docs/api.md, Batches).

This module holds the item and result types of Client.claim_batch,
finish_batch, extend_lease_batch and lookup_batch, and turns them into
requests and replies into results; it imports nothing of the client, which
builds on it. Each call returns one ItemResult per item, in order, each what the lone call
of that item would have returned: the response (a ClaimResponse or a Record)
or the DedupError it would have raised. A batch is not a transaction. The
exception a batch call itself raises concerns the whole call: the consumer,
the credential, too many items, the server unreachable.
"""

from __future__ import annotations

import dataclasses
from typing import Generic, Optional, Sequence, TypeVar, Union

from google.protobuf.message import Message

from ._proto.dedup.v1 import dedup_pb2
from ._durations import Seconds, duration
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


def claim_batch_request(consumer: str,
                        items: Sequence[Union[ClaimItem, str]]) -> dedup_pb2.ClaimBatchRequest:
    """The ClaimBatchRequest of items (a str item is a key with no digest)."""
    req = dedup_pb2.ClaimBatchRequest(consumer=consumer)
    for it in items:
        item = ClaimItem(it) if isinstance(it, str) else it
        req.items.add(key=item.key, digest=item.digest, owner=item.owner,
                      lease_ttl=duration(item.lease_ttl))
    return req


def finish_batch_request(consumer: str,
                         items: Sequence[FinishItem]) -> dedup_pb2.FinishBatchRequest:
    """The FinishBatchRequest of items."""
    req = dedup_pb2.FinishBatchRequest(consumer=consumer)
    for it in items:
        item = req.items.add(key=it.key, fencing_token=it.fencing_token)
        if it.rejection is not None:
            item.rejection.CopyFrom(it.rejection)
        else:
            item.result = it.result
    return req


def extend_lease_batch_request(consumer: str,
                               items: Sequence[ExtendItem]) -> dedup_pb2.ExtendLeaseBatchRequest:
    """The ExtendLeaseBatchRequest of items."""
    req = dedup_pb2.ExtendLeaseBatchRequest(consumer=consumer)
    for it in items:
        req.items.add(key=it.key, fencing_token=it.fencing_token, lease_ttl=duration(it.lease_ttl))
    return req


def claim_results(resp: dedup_pb2.ClaimBatchResponse) -> list[ItemResult[dedup_pb2.ClaimResponse]]:
    """One ItemResult per item of a ClaimBatchResponse."""
    return [ItemResult(r.claim if r.HasField("claim") else None, _error(r.error, r.HasField("error")),
                       r.result_omitted)
            for r in resp.results]


# A reply whose results carry a Record: FinishBatch, ExtendLeaseBatch and
# LookupBatch.
RecordsReply = Union[dedup_pb2.FinishBatchResponse, dedup_pb2.ExtendLeaseBatchResponse,
                     dedup_pb2.LookupBatchResponse]


def record_results(resp: RecordsReply) -> list[ItemResult[dedup_pb2.Record]]:
    """One ItemResult per item of a reply whose results carry a Record."""
    return [ItemResult(r.record if r.HasField("record") else None,
                       _error(r.error, r.HasField("error")), r.result_omitted)
            for r in resp.results]


def _error(status: Message, present: bool) -> Optional[DedupError]:
    return from_status(status) if present else None
