"""Typed errors for dedupd calls, built from the server's google.rpc.Status.

dedupd attaches a google.rpc.ErrorInfo (domain "dedup.v1") with a stable
reason to every error, and the stored dedup.v1.Record to errors about an
existing record. gRPC Python only exposes those details as the trailing
metadata "grpc-status-details-bin", and Debian ships no google.rpc modules,
so the two small messages needed are declared here in a private descriptor
pool: same field numbers as googleapis' status.proto and error_details.proto,
so the bytes decode identically, without clashing with a googleapis package
the application may load itself.
"""

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf import any_pb2  # noqa: F401  (registers google.protobuf.Any)

from ._proto.dedup.v1 import dedup_pb2

ERROR_DOMAIN = "dedup.v1"

REASON_INVALID_FIELD = "INVALID_FIELD"
REASON_MALFORMED_REQUEST = "MALFORMED_REQUEST"
REASON_NOT_FOUND = "RECORD_NOT_FOUND"
REASON_DIGEST_MISMATCH = "DIGEST_MISMATCH"
REASON_ALREADY_FINISHED = "ALREADY_FINISHED"
REASON_LEASE_LOST = "LEASE_LOST"
REASON_STORE_UNAVAILABLE = "STORE_UNAVAILABLE"
REASON_UNAUTHENTICATED = "UNAUTHENTICATED"
REASON_PERMISSION_DENIED = "PERMISSION_DENIED"

_STATUS_DETAILS_KEY = "grpc-status-details-bin"
_RECORD_TYPE_URL = "type.googleapis.com/dedup.v1.Record"
_ERROR_INFO_TYPE_URL = "type.googleapis.com/google.rpc.ErrorInfo"


def _status_messages():
    """Returns (Status, ErrorInfo) classes from a private descriptor pool."""
    f = descriptor_pb2.FileDescriptorProto(
        name="dedupd_private/google_rpc.proto", package="google.rpc", syntax="proto3")
    f.dependency.append("google/protobuf/any.proto")
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

    pool = descriptor_pool.DescriptorPool()
    any_file = descriptor_pb2.FileDescriptorProto()
    any_pb2.DESCRIPTOR.CopyToProto(any_file)
    pool.Add(any_file)
    pool.Add(f)
    get = getattr(message_factory, "GetMessageClass", None)
    if get is None:  # protobuf < 4.22
        factory = message_factory.MessageFactory(pool)
        get = factory.GetPrototype
    return (get(pool.FindMessageTypeByName("google.rpc.Status")),
            get(pool.FindMessageTypeByName("google.rpc.ErrorInfo")))


_Status, _ErrorInfo = _status_messages()


class DedupError(Exception):
    """An error answered by dedupd (or by gRPC on the way to it).

    code is the grpc.StatusCode; reason the ErrorInfo reason ("" when the
    error carried none, e.g. UNIMPLEMENTED or a transport failure); metadata
    the ErrorInfo metadata; record the stored dedup.v1.Record when the server
    attached one, else None.
    """

    def __init__(self, message, code=None, reason="", metadata=None, record=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.metadata = dict(metadata or {})
        self.record = record

    def __str__(self):
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


class InProgressTimeout(DedupError):
    """do() waited its bound while another caller held the key. record is the
    last record seen."""


class Rejected(DedupError):
    """The key's outcome is a terminal rejection: either fn raised Terminal
    just now (replayed is False) or a stored one was replayed (replayed is
    True). record.rejection holds reason, message and detail."""

    def __init__(self, record, replayed):
        rej = record.rejection
        super().__init__(f"rejected: {rej.reason}: {rej.message}",
                         reason="REJECTED", record=record)
        self.replayed = replayed
        self.rejection = rej


_BY_REASON = {
    REASON_DIGEST_MISMATCH: DigestMismatch,
    REASON_LEASE_LOST: LeaseLost,
    REASON_ALREADY_FINISHED: AlreadyFinished,
    REASON_NOT_FOUND: RecordNotFound,
    REASON_INVALID_FIELD: InvalidRequest,
    REASON_MALFORMED_REQUEST: InvalidRequest,
    REASON_STORE_UNAVAILABLE: Unavailable,
    REASON_UNAUTHENTICATED: Unauthenticated,
    REASON_PERMISSION_DENIED: PermissionDenied,
}

# Codes whose meaning does not depend on who answered (dedupd or a proxy in
# front of it), for errors without a dedupd ErrorInfo.
_BY_CODE = {
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
}


def from_rpc_error(err):
    """Converts a grpc.RpcError into the matching DedupError subclass."""
    code = err.code() if hasattr(err, "code") else None
    message = err.details() if hasattr(err, "details") else str(err)
    reason, metadata, record = "", {}, None
    trailers = err.trailing_metadata() if hasattr(err, "trailing_metadata") else None
    for key, value in trailers or ():
        if key != _STATUS_DETAILS_KEY:
            continue
        status = _Status.FromString(value)
        for detail in status.details:
            if detail.type_url == _ERROR_INFO_TYPE_URL:
                info = _ErrorInfo.FromString(detail.value)
                if info.domain == ERROR_DOMAIN:
                    reason, metadata = info.reason, dict(info.metadata)
            elif detail.type_url == _RECORD_TYPE_URL:
                record = dedup_pb2.Record.FromString(detail.value)
    cls = _BY_REASON.get(reason)
    if cls is None:
        cls = _BY_CODE.get(code, DedupError)
    return cls(message or "", code=code, reason=reason, metadata=metadata, record=record)
