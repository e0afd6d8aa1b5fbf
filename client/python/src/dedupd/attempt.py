"""What runs under one acquisition of a key: settle, then fn, and how the
outcome is to be recorded. One copy of the rule for do(), do_batch() and
do_in_order().

settle runs first on an acquisition that may follow an earlier holder
(the key's attempt number is above 1; every acquisition of a stream
event, since a stream keeps no count). It looks in the caller's own
system for the effect (the payment gateway's lookup by event id, the row
the effect wrote) and says:

    a result (bytes, or str)   the effect happened: complete with it, fn
                               does not run
    None                       it did not: fn runs
    raise Terminal(...)        refuse the key for good
    raise anything else        nobody knows: record nothing (the claim
                               stays PENDING, settle runs again after the
                               lease) and re-raise

fn's outcome is recorded as:

    a result                   Complete
    raise Terminal(...)        Reject, stored for good
    raise an Exception         a retryable release (safe: the next
                               acquisition runs settle first)
    raise TimeoutError (socket and asyncio timeouts included),
    OutcomeUnknown, or a BaseException that is not an Exception
    (KeyboardInterrupt, SystemExit, GeneratorExit, asyncio.CancelledError)
                               nothing, as a crash would: the claim stays
                               PENDING until its lease runs out. A
                               timed-out request may have done its work
                               after the caller stopped waiting.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Mapping, Optional, Union

from ._callbacks import call


class OutcomeUnknown(Exception):
    """Raise from fn when its effect may or may not have happened (a
    COMMIT whose answer was lost, CockroachDB's 40003): nothing is
    recorded, the claim stays PENDING, and settle decides once its lease
    has run out. dedupd.receipts raises it; the Go client's Unknown marks
    the same."""


class Terminal(Exception):
    """Raise from fn (or settle) to refuse the work for good: the rejection
    is stored and replayed to every later claim of the key. reason is a
    short machine-readable code (at most 128 bytes), detail opaque bytes."""

    def __init__(self, reason: str, message: str = "", detail: bytes = b"") -> None:
        super().__init__(f"{reason}: {message}" if message else reason)
        self.reason = reason
        self.message = message
        self.detail = detail


# What fn may return: the result as bytes, a str (UTF-8 encoded) or None
# (empty).
Result = Union[bytes, bytearray, memoryview, str, None]

# What settle returns: the effect's result when it happened (bytes or a
# str; b"" for an empty one), None when it did not.
Found = Union[bytes, bytearray, memoryview, str, None]


def to_bytes(result: Result) -> bytes:
    if result is None:
        return b""
    if isinstance(result, str):
        return result.encode("utf-8")
    return bytes(result)


@dataclasses.dataclass
class Step:
    """What settle and fn did under one lease, and so what to record.
    Exactly one of terminal, release and pending is set, or none (then
    complete with result)."""
    result: bytes = b""
    # settle found the effect: result is settle's, fn did not run.
    settled: bool = False
    # Reject for good.
    terminal: Optional[Terminal] = None
    # fn raised an Exception: release the key for a retry.
    release: Optional[Exception] = None
    # The outcome is unknown (settle failed, or fn raised a BaseException
    # that is not an Exception): record nothing.
    pending: Optional[BaseException] = None
    # settle raised it (pending or terminal), not fn.
    in_settle: bool = False


def _not_none(found: Any) -> bool:
    return found is not None


def run_attempt(fn: Any, settle: Any, args: tuple[Any, ...], keywords: Mapping[str, Any],
                retaken: bool, is_found: Callable[[Any], bool] = _not_none) -> Step:
    """Runs settle (when given and retaken: an earlier holder may have done
    the effect), then fn unless settle found the effect (is_found of what
    it returned) or failed. Catches everything either raises: the caller
    records the Step, then raises. dedupd.aio runs the same steps awaiting
    fn and settle."""
    if settle is not None and retaken:
        try:
            found = call(settle, args, keywords)
        except BaseException as e:  # noqa: B036  (classified: nothing escapes)
            return settle_failed(e)
        if is_found(found):
            return settled_step(found)
    try:
        result = call(fn, args, keywords)
    except BaseException as e:  # noqa: B036  (classified: nothing escapes)
        return fn_failed(e)
    return Step(result=to_bytes(result))


def settled_step(found: Found) -> Step:
    """settle found the effect: complete with its result, fn does not run."""
    return Step(result=b"" if isinstance(found, bool) else to_bytes(found), settled=True)


def settle_failed(e: BaseException) -> Step:
    """What settle raising e records: a rejection for Terminal, else
    nothing (unknown outcome: left pending)."""
    if isinstance(e, Terminal):
        return Step(terminal=e, in_settle=True)
    return Step(pending=e, in_settle=True)


def fn_failed(e: BaseException) -> Step:
    """What fn raising e records (see the module doc)."""
    if isinstance(e, Terminal):
        return Step(terminal=e)
    if isinstance(e, (TimeoutError, OutcomeUnknown)):  # unknown outcomes: left pending
        return Step(pending=e)
    if isinstance(e, Exception):
        return Step(release=e)
    return Step(pending=e)  # process-ending: left pending, as a crash
