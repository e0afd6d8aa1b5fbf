"""dedupd on asyncio: the Python client over grpc.aio.

    import dedupd, dedupd.aio

    async def handle(event):
        async with dedupd.aio.Client("127.0.0.1:7070") as c:
            out = await dedupd.aio.do(c, "payments", event["id"], charge,
                                      settle=find_charge,
                                      digest=dedupd.digest_json(event))

Client, do, do_batch, do_in_order (park mode included), do_parked and
reconcile are the coroutine forms of
dedupd's, with the same arguments, the same semantics and the same error
classes (dedupd.DedupError and its subclasses, dedupd.Terminal,
dedupd.Rejected, ...): both run one copy of each rule (dedupd.attempt,
dedupd.do's claim decisions, the batch planning), and only the I/O
differs. fn and settle may be coroutine functions (awaited) or plain ones
(called on the event loop: keep them quick). The heartbeat that extends
the lease while fn runs is an asyncio task; a cancelled fn (the task
running do() cancelled, or an asyncio.timeout around it) records nothing,
as a crash would, and the CancelledError propagates.
"""

from ._client import Client
from ._do import do
from ._dobatch import do_batch
from ._inorder import do_in_order
from ._parked import do_parked
from ._reconcile import reconcile

__all__ = ["Client", "do", "do_batch", "do_in_order", "do_parked", "reconcile"]
