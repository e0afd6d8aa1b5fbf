"""Python client of dedupd.

    import dedupd
    with dedupd.Client("127.0.0.1:7070") as c:
        out = dedupd.do(c, "payments", "charge-42", charge,
                        digest=dedupd.digest_json(request))

Client wraps every DedupService RPC; do() runs the two-phase pattern;
reconcile() settles claims whose lease ran out; digest_* compute the digest
spec every dedupd client shares. Errors are DedupError subclasses carrying
the server's ErrorInfo reason and the stored record. dedup_pb2, admin_pb2
and error_reason_pb2 are the generated dedup.v1 messages (requests,
Record, ErrorReason), for callers that build or inspect them directly.
"""

from ._proto.dedup.v1 import admin_pb2, dedup_pb2, error_reason_pb2
from ._proto.dedup.v1.dedup_pb2 import (  # noqa: F401  (re-exported enums)
    OUTCOME_ACQUIRED, OUTCOME_COMPLETED, OUTCOME_IN_PROGRESS, OUTCOME_REJECTED,
    STATE_COMPLETED, STATE_PENDING, STATE_REJECTED, STATE_RELEASED)

from .client import Client
from .digest import (canonical_json, digest_bytes, digest_json, digest_json_text,
                     digest_proto)
from .do import Outcome, Terminal, do
from .errors import (AlreadyFinished, Cancelled, DeadlineExceeded, DedupError,
                     DigestMismatch, InProgressTimeout, InternalError, InvalidRequest,
                     LeaseLost, PermissionDenied, PolicyNotFound, RecordNotFound, Rejected,
                     ResourceExhausted, Unauthenticated, Unavailable)
from .reconcile import Complete, Reject, Release, Settled, reconcile

__all__ = [
    "dedup_pb2", "admin_pb2", "error_reason_pb2",
    "Client", "do", "Outcome", "Terminal", "reconcile", "Complete", "Reject", "Release",
    "Settled", "canonical_json", "digest_bytes", "digest_json", "digest_json_text",
    "digest_proto", "DedupError", "DigestMismatch", "LeaseLost", "AlreadyFinished",
    "RecordNotFound", "InvalidRequest", "Unavailable", "Unauthenticated", "PermissionDenied",
    "InProgressTimeout", "Rejected", "PolicyNotFound", "ResourceExhausted",
    "DeadlineExceeded", "Cancelled", "InternalError",
    "OUTCOME_ACQUIRED", "OUTCOME_IN_PROGRESS", "OUTCOME_COMPLETED", "OUTCOME_REJECTED",
    "STATE_PENDING", "STATE_COMPLETED", "STATE_REJECTED", "STATE_RELEASED",
]
