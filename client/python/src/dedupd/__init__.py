"""Python client of dedupd.

    import dedupd
    with dedupd.Client("127.0.0.1:7070") as c:
        out = dedupd.do(c, "payments", "charge-42", charge, settle=find_charge,
                        digest=dedupd.digest_json(request))

Client wraps every DedupService RPC and the StreamService ones
(claim_stream, ...); do() runs the two-phase pattern (settle= looks for
the effect of an earlier holder before fn runs again), do_batch() does the
same for a whole poll in one claim_batch and one finish_batch, and
do_in_order() for a stream's sequenced events (park=True parks an early
event in dedupd and runs the parked ones as they come back in order;
do_parked() picks up what a crash left);
reconcile() settles claims whose lease ran out; digest_* compute the digest
spec every dedupd client shares. Errors are DedupError subclasses carrying
the server's ErrorInfo reason and the stored record. dedup_pb2, admin_pb2
and error_reason_pb2 are the generated dedup.v1 messages (requests,
Record, ErrorReason), for callers that build or inspect them directly.
dedupd.aio is the same client on asyncio (grpc.aio): import dedupd.aio.
dedupd.receipts writes the effect's receipt in the caller's own SQL
transaction and settles from it: import dedupd.receipts.
"""

from ._proto.dedup.v1 import admin_pb2, dedup_pb2, error_reason_pb2, stream_pb2
from ._proto.dedup.v1.stream_pb2 import (  # noqa: F401  (re-exported enums)
    STREAM_MODE_DENSE, STREAM_MODE_VERSIONS, STREAM_OUTCOME_ACQUIRED, STREAM_OUTCOME_DUPLICATE,
    STREAM_OUTCOME_IN_PROGRESS, STREAM_OUTCOME_PARKED)
from ._proto.dedup.v1.dedup_pb2 import (  # noqa: F401  (re-exported enums)
    OUTCOME_ACQUIRED, OUTCOME_COMPLETED, OUTCOME_IN_PROGRESS, OUTCOME_REJECTED,
    STATE_COMPLETED, STATE_PENDING, STATE_REJECTED, STATE_RELEASED)

from .batch import ClaimItem, ExtendItem, FinishItem, ItemResult
from .client import Client
from .digest import (canonical_json, digest_bytes, digest_json, digest_json_text,
                     digest_proto)
from .attempt import OutcomeUnknown
from .do import Outcome, Settle, Terminal, Work, do
from .dobatch import BatchOutcome, do_batch
from .errors import (AlreadyFinished, Cancelled, DeadlineExceeded, DedupError,
                     DigestMismatch, InProgressTimeout, InternalError, InvalidRequest,
                     LeaseLost, NoGap, ParkFull, ParkUnsupported, PermissionDenied, PolicyNotFound, RecordNotFound, Rejected,
                     ResourceExhausted, SequenceGap, StreamModeMismatch, StreamNotFound,
                     Unauthenticated, Unavailable)
from .inorder import InOrderResult, StreamRejected, do_in_order
from .lease import Lease
from .parked import ParkedResult, ParkedSettle, ParkedWork, do_parked
from .reconcile import Complete, Reject, Release, Settled, reconcile

__all__ = [
    "dedup_pb2", "admin_pb2", "error_reason_pb2", "stream_pb2",
    "do_in_order", "InOrderResult", "StreamRejected", "SequenceGap", "StreamModeMismatch",
    "StreamNotFound", "STREAM_MODE_DENSE", "STREAM_MODE_VERSIONS", "STREAM_OUTCOME_ACQUIRED",
    "STREAM_OUTCOME_DUPLICATE", "STREAM_OUTCOME_IN_PROGRESS", "STREAM_OUTCOME_PARKED",
    "do_parked", "ParkedResult", "ParkedWork", "ParkedSettle", "ParkFull", "ParkUnsupported",
    "NoGap",
    "Client", "do", "Outcome", "OutcomeUnknown", "Terminal", "Work", "Settle", "Lease", "do_batch", "BatchOutcome", "ClaimItem",
    "FinishItem", "ExtendItem", "ItemResult", "reconcile", "Complete", "Reject", "Release",
    "Settled", "canonical_json", "digest_bytes", "digest_json", "digest_json_text",
    "digest_proto", "DedupError", "DigestMismatch", "LeaseLost", "AlreadyFinished",
    "RecordNotFound", "InvalidRequest", "Unavailable", "Unauthenticated", "PermissionDenied",
    "InProgressTimeout", "Rejected", "PolicyNotFound", "ResourceExhausted",
    "DeadlineExceeded", "Cancelled", "InternalError",
    "OUTCOME_ACQUIRED", "OUTCOME_IN_PROGRESS", "OUTCOME_COMPLETED", "OUTCOME_REJECTED",
    "STATE_PENDING", "STATE_COMPLETED", "STATE_REJECTED", "STATE_RELEASED",
]
