"""Typed errors for dedupd calls, built from the server's google.rpc.Status.

dedupd attaches a google.rpc.ErrorInfo (domain "dedup.v1") with a stable
reason to every error, the stored dedup.v1.Record to errors about an
existing record, and a google.rpc.RetryInfo to refusals that say when to try
again. gRPC Python only exposes those details as the trailing metadata
"grpc-status-details-bin", and Debian ships no google.rpc modules
(grpcio-status, googleapis-common-protos), so the three small messages
needed are declared here in a private descriptor pool: same field numbers
as googleapis' status.proto and error_details.proto, so the bytes decode
identically, without clashing with a googleapis package the application may
load itself.

The reasons come from the one list every dedupd component reads,
proto/dedup/v1/error_reason.proto (ErrorReason; a value's name is its wire
string). Each one maps to an exception class below.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import Message

from ._proto.dedup.v1 import dedup_pb2, stream_pb2
from ._proto.dedup.v1.error_reason_pb2 import ErrorReason

ERROR_DOMAIN = "dedup.v1"


def reason_name(reason: "ErrorReason.ValueType") -> str:
    """The wire string of an ErrorReason value, e.g. "DIGEST_MISMATCH"."""
    return str(ErrorReason.Name(reason))


REASON_INVALID_FIELD = reason_name(ErrorReason.INVALID_FIELD)
REASON_MALFORMED_REQUEST = reason_name(ErrorReason.MALFORMED_REQUEST)
REASON_NOT_FOUND = reason_name(ErrorReason.RECORD_NOT_FOUND)
REASON_DIGEST_MISMATCH = reason_name(ErrorReason.DIGEST_MISMATCH)
REASON_ALREADY_FINISHED = reason_name(ErrorReason.ALREADY_FINISHED)
REASON_LEASE_LOST = reason_name(ErrorReason.LEASE_LOST)
REASON_STORE_UNAVAILABLE = reason_name(ErrorReason.STORE_UNAVAILABLE)
REASON_UNAUTHENTICATED = reason_name(ErrorReason.UNAUTHENTICATED)
REASON_PERMISSION_DENIED = reason_name(ErrorReason.PERMISSION_DENIED)

_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_TYPE_URL_PREFIX = "type.googleapis.com/"
_RECORD_TYPE_URL = _TYPE_URL_PREFIX + dedup_pb2.Record.DESCRIPTOR.full_name
_STREAM_TYPE_URL = _TYPE_URL_PREFIX + stream_pb2.Stream.DESCRIPTOR.full_name
_ERROR_INFO_TYPE_URL = _TYPE_URL_PREFIX + "google.rpc.ErrorInfo"
_RETRY_INFO_TYPE_URL = _TYPE_URL_PREFIX + "google.rpc.RetryInfo"


def _status_messages() -> tuple[type[Message], type[Message], type[Message]]:
    """Returns (Status, ErrorInfo, RetryInfo) classes from a private
    descriptor pool."""
    f = descriptor_pb2.FileDescriptorProto(
        name="dedupd_private/google_rpc.proto", package="google.rpc", syntax="proto3")
    f.dependency.extend(["google/protobuf/any.proto", "google/protobuf/duration.proto"])
    T = descriptor_pb2.FieldDescriptorProto
    status = f.message_type.add(name="Status")
    status.field.add(name="code", number=1, type=T.TYPE_INT32, label=T.LABEL_OPTIONAL)
    status.field.add(name="message", number=2, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    status.field.add(name="details", number=3, type=T.TYPE_MESSAGE, label=T.LABEL_REPEATED,
                     type_name=".google.protobuf.Any")
    info = f.message_type.add(name="ErrorInfo")
    info.field.add(name="reason", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    info.field.add(name="domain", number=2, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    entry = info.nested_type.add(name="MetadataEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=T.TYPE_STRING, label=T.LABEL_OPTIONAL)
    info.field.add(name="metadata", number=3, type=T.TYPE_MESSAGE, label=T.LABEL_REPEATED,
                   type_name=".google.rpc.ErrorInfo.MetadataEntry")
    retry = f.message_type.add(name="RetryInfo")
    retry.field.add(name="retry_delay", number=1, type=T.TYPE_MESSAGE, label=T.LABEL_OPTIONAL,
                    type_name=".google.protobuf.Duration")

    pool = descriptor_pool.DescriptorPool()
    for dep in (any_pb2, duration_pb2):
        dep_file = descriptor_pb2.FileDescriptorProto()
        dep.DESCRIPTOR.CopyToProto(dep_file)
        pool.Add(dep_file)
    pool.Add(f)
    get: Any = getattr(message_factory, "GetMessageClass", None)
    if get is None:  # protobuf < 4.22
        get = message_factory.MessageFactory(pool).GetPrototype
    return (get(pool.FindMessageTypeByName("google.rpc.Status")),
            get(pool.FindMessageTypeByName("google.rpc.ErrorInfo")),
            get(pool.FindMessageTypeByName("google.rpc.RetryInfo")))


# Any: classes built at run time from descriptors have no static fields.
_Status: Any
_ErrorInfo: Any
_RetryInfo: Any
_Status, _ErrorInfo, _RetryInfo = _status_messages()


class DedupError(Exception):
    """An error answered by dedupd (or by gRPC on the way to it).

    code is the grpc.StatusCode; reason the ErrorInfo reason ("" when the
    error carried none, e.g. UNIMPLEMENTED or a transport failure); metadata
    the ErrorInfo metadata; record the stored dedup.v1.Record when the server
    attached one, else None; retry_after the seconds the server asked the
    caller to wait (google.rpc.RetryInfo), else None.
    """

    def __init__(self, message: str, code: Optional[grpc.StatusCode] = None, reason: str = "",
                 metadata: Optional[Mapping[str, str]] = None,
                 record: Optional[dedup_pb2.Record] = None,
                 retry_after: Optional[float] = None,
                 stream: Optional[stream_pb2.Stream] = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.metadata: dict[str, str] = dict(metadata or {})
        self.record = record
        self.retry_after = retry_after
        # The stored dedup.v1.Stream a stream refusal was about, else None.
        self.stream = stream

    def __str__(self) -> str:
        label = self.reason or (self.code.name if self.code else "")
        return f"{label}: {self.args[0]}" if label else str(self.args[0])


class DigestMismatch(DedupError):
    """The key is bound to another digest: same key, different content.
    record is the stored record."""


class LeaseLost(DedupError):
    """The fencing token is no longer the key's current one: someone took the
    key over after the lease ran out, or it was released. record is the
    stored record when there is one."""


class AlreadyFinished(DedupError):
    """The key already has another terminal outcome. record is the stored
    record."""


class RecordNotFound(DedupError):
    """Lookup of a key with no live record."""


class PolicyNotFound(DedupError):
    """The consumer has no stored policy (AdminService)."""


class InvalidRequest(DedupError):
    """A field broke the API's limits (metadata["field"] names it), or the
    request did not decode."""


class Unavailable(DedupError):
    """The server or its store could not be reached; nothing changed."""


class Unauthenticated(DedupError):
    """No credential, or one dedupd does not know (UNAUTHENTICATED): check
    the token (token= or DEDUPD_TOKEN) or the client certificate."""


class PermissionDenied(DedupError):
    """A known credential that does not cover the call's consumer
    (PERMISSION_DENIED)."""


class ResourceExhausted(DedupError):
    """The consumer used up its request rate (RATE_LIMITED) or the server is
    at its bound of calls in flight (OVERLOADED); nothing changed.
    retry_after says when to try again, when the server said."""


class DeadlineExceeded(DedupError):
    """The call's deadline passed (the client's timeout, or the server's
    own). A write's outcome is then unknown: repeat the call to learn it."""


class Cancelled(DedupError):
    """The call was cancelled."""


class InternalError(DedupError):
    """A bug in dedupd; the server logged the cause."""


class SequenceGap(DedupError):
    """A dense stream was claimed past the sequence it expects next
    (SEQUENCE_GAP): hold the event back until `expected` is processed, or
    let it be redelivered. stream is the stored stream."""

    @property
    def expected(self) -> int:
        """The sequence the stream accepts next."""
        return int(self.metadata.get("expected_sequence", "0"))


class StreamModeMismatch(DedupError):
    """The claim named another mode than the stream's, or than its
    consumer's stream policy fixes (STREAM_MODE_MISMATCH)."""


class StreamNotFound(DedupError):
    """get_stream of a stream with no live record (STREAM_NOT_FOUND)."""


class ParkFull(ResourceExhausted):
    """A claim with park found the stream at its max_parked, or the
    consumer's parked payloads at their byte budget (PARK_FULL); nothing
    was stored: let the message be redelivered."""


class ParkUnsupported(DedupError):
    """do_in_order(park=True) was answered SEQUENCE_GAP: the server does
    not know park mode (it ignored the field). __cause__ is the
    SequenceGap."""


class NoGap(DedupError):
    """SkipGap found no parked event past an open gap (NO_GAP)."""


class InProgressTimeout(DedupError):
    """do() waited its bound while another caller held the key. record is the
    last record seen."""


class Rejected(DedupError):
    """The key's outcome is a terminal rejection: either fn raised Terminal
    just now (replayed is False) or a stored one was replayed (replayed is
    True). record.rejection holds reason, message and detail."""

    def __init__(self, record: dedup_pb2.Record, replayed: bool) -> None:
        rej = record.rejection
        super().__init__(f"rejected: {rej.reason}: {rej.message}",
                         reason="REJECTED", record=record)
        self.replayed = replayed
        self.rejection = rej


# The class of every reason in ErrorReason, keyed by the enum value so that a
# reason the proto does not define cannot be written here. tests/test_errors
# checks that every value of the enum (but UNSPECIFIED) has an entry.
_CLASS_BY_REASON_VALUE: dict["ErrorReason.ValueType", type[DedupError]] = {
    ErrorReason.INVALID_FIELD: InvalidRequest,
    ErrorReason.MALFORMED_REQUEST: InvalidRequest,
    ErrorReason.RECORD_NOT_FOUND: RecordNotFound,
    ErrorReason.POLICY_NOT_FOUND: PolicyNotFound,
    ErrorReason.DIGEST_MISMATCH: DigestMismatch,
    ErrorReason.ALREADY_FINISHED: AlreadyFinished,
    ErrorReason.LEASE_LOST: LeaseLost,
    ErrorReason.STORE_UNAVAILABLE: Unavailable,
    ErrorReason.DEADLINE_EXCEEDED: DeadlineExceeded,
    ErrorReason.CANCELED: Cancelled,
    ErrorReason.INTERNAL: InternalError,
    ErrorReason.UNAUTHENTICATED: Unauthenticated,
    ErrorReason.PERMISSION_DENIED: PermissionDenied,
    ErrorReason.RATE_LIMITED: ResourceExhausted,
    ErrorReason.OVERLOADED: ResourceExhausted,
    ErrorReason.SEQUENCE_GAP: SequenceGap,
    ErrorReason.STREAM_MODE_MISMATCH: StreamModeMismatch,
    ErrorReason.STREAM_NOT_FOUND: StreamNotFound,
    ErrorReason.PARK_FULL: ParkFull,
    ErrorReason.NO_GAP: NoGap,
}

_CLASS_BY_REASON: dict[str, type[DedupError]] = {
    reason_name(value): cls for value, cls in _CLASS_BY_REASON_VALUE.items()}

# Codes whose meaning does not depend on who answered (dedupd, a proxy in
# front of it, or the local gRPC library), for errors without a dedupd
# ErrorInfo.
_CLASS_BY_CODE: dict[grpc.StatusCode, type[DedupError]] = {
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
}


def class_for_reason(reason: str) -> Optional[type[DedupError]]:
    """The exception class of an ErrorInfo reason of domain dedup.v1, or
    None for a reason this client does not know."""
    return _CLASS_BY_REASON.get(reason)


def from_rpc_error(err: grpc.RpcError) -> DedupError:
    """Converts a grpc.RpcError into the matching DedupError subclass."""
    code: Optional[grpc.StatusCode] = err.code() if hasattr(err, "code") else None
    message: str = err.details() if hasattr(err, "details") else str(err)
    trailers: Optional[Iterable[tuple[str, Any]]] = (
        err.trailing_metadata() if hasattr(err, "trailing_metadata") else None)
    details: list[Any] = []
    for key, value in trailers or ():
        if key == _STATUS_DETAILS_KEY:
            details.extend(_Status.FromString(value).details)
    return _error(code, message, details)


_CODE_BY_NUMBER = {c.value[0]: c for c in grpc.StatusCode}


def from_status(status: Message) -> DedupError:
    """Converts a google.rpc.Status message, such as one batch item's error,
    into the DedupError subclass its lone call would have raised."""
    decoded = _Status.FromString(status.SerializeToString())
    return _error(_CODE_BY_NUMBER.get(decoded.code), decoded.message, decoded.details)


def _error(code: Optional[grpc.StatusCode], message: str, details: Iterable[Any]) -> DedupError:
    reason, metadata, record, retry_after = "", {}, None, None
    stream: Optional[stream_pb2.Stream] = None
    for detail in details:
        if detail.type_url == _ERROR_INFO_TYPE_URL:
            info = _ErrorInfo.FromString(detail.value)
            if info.domain == ERROR_DOMAIN:
                reason, metadata = info.reason, dict(info.metadata)
        elif detail.type_url == _RECORD_TYPE_URL:
            record = dedup_pb2.Record.FromString(detail.value)
        elif detail.type_url == _STREAM_TYPE_URL:
            stream = stream_pb2.Stream.FromString(detail.value)
        elif detail.type_url == _RETRY_INFO_TYPE_URL:
            delay = _RetryInfo.FromString(detail.value).retry_delay
            retry_after = delay.seconds + delay.nanos / 1e9
    cls = class_for_reason(reason) or _CLASS_BY_CODE.get(code) or DedupError
    return cls(message or "", code=code, reason=reason, metadata=metadata, record=record,
               retry_after=retry_after, stream=stream)
