"""run_attempt: dedupd.attempt's steps with fn and settle awaited. The
classification of what they return or raise is dedupd.attempt's own."""

from __future__ import annotations

import inspect
from typing import Any, Callable, Mapping

from .._callbacks import call
from ..attempt import Step, fn_failed, settle_failed, settled_step, to_bytes


async def awaited(value: Any) -> Any:
    """value, awaited when it is awaitable (fn and settle may be coroutine
    functions or plain ones)."""
    if inspect.isawaitable(value):
        return await value
    return value


async def call_awaited(fn: Callable[..., Any], args: tuple[Any, ...],
                       keywords: Mapping[str, Any]) -> Any:
    return await awaited(call(fn, args, keywords))


async def run_attempt(fn: Any, settle: Any, args: tuple[Any, ...], keywords: Mapping[str, Any],
                      retaken: bool, is_found: Callable[[Any], bool] = lambda found: found is not None
                      ) -> Step:
    """dedupd.attempt.run_attempt, awaiting fn and settle."""
    if settle is not None and retaken:
        try:
            found = await call_awaited(settle, args, keywords)
        except BaseException as e:  # noqa: B036  (classified: nothing escapes)
            return settle_failed(e)
        if is_found(found):
            return settled_step(found)
    try:
        result = await call_awaited(fn, args, keywords)
    except BaseException as e:  # noqa: B036  (classified: nothing escapes)
        return fn_failed(e)
    return Step(result=to_bytes(result))
