"""Lease: the lease a claim's work runs under, and the heartbeat that
extends it.

fn and settle get the Lease as the keyword lease= when they accept it.
Check lease.lost before an effect that a fencing token cannot guard (a
payment gateway's charge, an e-mail): once it is True another caller may
hold the key, and the effect may be done twice. remaining() is the seconds
left before the lease runs out, as this process counts them (from the time
the claim or the last extension was sent, so it never overstates).
"""

from __future__ import annotations

import threading
import time
from typing import Optional, Union

from ._proto.dedup.v1 import dedup_pb2, stream_pb2
from .client import Client
from .errors import AlreadyFinished, DedupError, LeaseLost, RecordNotFound, StreamNotFound

# The answers to an extension that mean the lease is gone for good.
LEASE_GONE = (LeaseLost, AlreadyFinished, RecordNotFound, StreamNotFound)


class Lease:
    """One acquisition's lease. lost is True once dedupd said the lease is
    gone (error then holds its answer, e.g. LeaseLost), and while the
    lease's time has run out with no extension: another caller may then
    take the key over. remaining() is the seconds left (0 when lost)."""

    def __init__(self, token: int, ends_at: float) -> None:
        self.token = token
        self._ends_at = ends_at  # time.monotonic() when the lease runs out
        self._error: Optional[DedupError] = None
        self._lock = threading.Lock()

    @property
    def lost(self) -> bool:
        return self.remaining() <= 0

    @property
    def error(self) -> Optional[DedupError]:
        """dedupd's answer that the lease is gone, else None."""
        with self._lock:
            return self._error

    def remaining(self) -> float:
        with self._lock:
            if self._error is not None:
                return 0.0
            return max(0.0, self._ends_at - time.monotonic())

    def _extended(self, ends_at: float) -> None:
        with self._lock:
            self._ends_at = max(self._ends_at, ends_at)

    def _lose(self, error: DedupError) -> None:
        with self._lock:
            self._error = error


def lease_span(record: Union[dedup_pb2.Record, stream_pb2.Stream], default: float) -> float:
    """The length in seconds of the current lease of record (a key's Record
    or a Stream; the server may have fixed another than asked, by policy),
    else default."""
    if record.HasField("lease_expires_at") and record.HasField("updated_at"):
        span = (record.lease_expires_at.ToNanoseconds() - record.updated_at.ToNanoseconds()) / 1e9
        if span > 0:
            return float(span)
    return default


class Heartbeat:
    """Extends one lease every `every` seconds until stopped: of a key, or
    with sequence set of that sequence of the stream `key`. An answer
    that the lease is gone ends it and is kept in the Lease: the work's
    outcome can no longer be recorded under this token."""

    def __init__(self, client: Client, consumer: str, key: str, lease: Lease, lease_ttl: float,
                 every: float, sequence: int = 0) -> None:
        self._stopped = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, args=(client, consumer, key, lease, lease_ttl, every, sequence),
            name=f"dedupd-heartbeat-{key}", daemon=True)
        self._thread.start()

    def _loop(self, client: Client, consumer: str, key: str, lease: Lease, lease_ttl: float,
              every: float, sequence: int) -> None:
        while not self._stopped.wait(every):
            sent = time.monotonic()
            record: Union[dedup_pb2.Record, stream_pb2.Stream]
            try:
                if sequence:
                    record = client.extend_stream_lease(consumer, key, sequence, lease.token,
                                                        lease_ttl=lease_ttl)
                else:
                    record = client.extend_lease(consumer, key, lease.token, lease_ttl=lease_ttl)
            except LEASE_GONE as err:
                lease._lose(err)
                return
            except DedupError:
                continue  # transient: the next beat tries again within the lease
            lease._extended(sent + lease_span(record, lease_ttl))

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()


def lease_start(sent: float, answered: float, span: float) -> float:
    """The time.monotonic() an acquired lease of span seconds is counted
    from, for a claim sent at sent and answered at answered. The server
    started it between the two: counting from sent errs early by the call's
    own time, right for a call that does not wait. A claim that waited for
    a holder (wait=) was acquired at the end of its wait, so it counts from
    the answer less a tenth of the span, still early for any answer that
    took less than a tenth of the lease to arrive (as the Go client)."""
    return max(sent, answered - span / 10)
