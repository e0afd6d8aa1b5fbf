"""The shapes of fn and settle, and how they are called.

fn and settle take their positional arguments (token, attempt for do();
key, token, attempt for do_batch(); token for do_in_order()) and, only if
they declare them (or **kwargs), the keywords record= (the key's
dedup.v1.Record at the claim; stream= for do_in_order, its dedup.v1.Stream)
and lease= (the Lease). So fn(token, attempt) keeps working, and
fn(token, attempt, *, record, lease) gets both.

The protocols below let mypy check a fn or settle against each of those
forms; R is what it returns.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping, Protocol, TypeVar, Union

from ._proto.dedup.v1 import dedup_pb2, stream_pb2
from .lease import Lease

R = TypeVar("R", covariant=True)


class KeyPlain(Protocol[R]):
    def __call__(self, token: int, attempt: int, /) -> R: ...


class KeyWithRecord(Protocol[R]):
    def __call__(self, token: int, attempt: int, /, *, record: dedup_pb2.Record) -> R: ...


class KeyWithLease(Protocol[R]):
    def __call__(self, token: int, attempt: int, /, *, lease: Lease) -> R: ...


class KeyWithBoth(Protocol[R]):
    def __call__(self, token: int, attempt: int, /, *, record: dedup_pb2.Record,
                 lease: Lease) -> R: ...


# do(): fn(token, attempt[, record=][, lease=]).
KeyCall = Union[KeyPlain[R], KeyWithRecord[R], KeyWithLease[R], KeyWithBoth[R]]


class BatchPlain(Protocol[R]):
    def __call__(self, key: str, token: int, attempt: int, /) -> R: ...


class BatchWithRecord(Protocol[R]):
    def __call__(self, key: str, token: int, attempt: int, /, *,
                 record: dedup_pb2.Record) -> R: ...


class BatchWithLease(Protocol[R]):
    def __call__(self, key: str, token: int, attempt: int, /, *, lease: Lease) -> R: ...


class BatchWithBoth(Protocol[R]):
    def __call__(self, key: str, token: int, attempt: int, /, *, record: dedup_pb2.Record,
                 lease: Lease) -> R: ...


# do_batch(): fn(key, token, attempt[, record=][, lease=]).
BatchCall = Union[BatchPlain[R], BatchWithRecord[R], BatchWithLease[R], BatchWithBoth[R]]


class StreamPlain(Protocol[R]):
    def __call__(self, token: int, /) -> R: ...


class StreamWithStream(Protocol[R]):
    def __call__(self, token: int, /, *, stream: stream_pb2.Stream) -> R: ...


class StreamWithLease(Protocol[R]):
    def __call__(self, token: int, /, *, lease: Lease) -> R: ...


class StreamWithBoth(Protocol[R]):
    def __call__(self, token: int, /, *, stream: stream_pb2.Stream, lease: Lease) -> R: ...


# do_in_order(): fn(token[, stream=][, lease=]).
StreamCall = Union[StreamPlain[R], StreamWithStream[R], StreamWithLease[R], StreamWithBoth[R]]


def call(fn: Callable[..., Any], args: tuple[Any, ...], keywords: Mapping[str, Any]) -> Any:
    """fn(*args, **the keywords fn accepts)."""
    return fn(*args, **{k: v for k, v in keywords.items() if _accepts(fn, k)})


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no signature to read (some builtins)
        return False
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return True
    p = params.get(name)
    return p is not None and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        inspect.Parameter.KEYWORD_ONLY)
