"""Work that a turn's abort event ends early: a model stream, a summary chunk, a web
fetch, an MCP call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def unless_aborted(work: Awaitable[T], abort: asyncio.Event) -> T | None:
    """`work`'s result (or its error), or None when `abort` is set first: then `work` is
    cancelled and its cleanup awaited, whatever it raises. Cancelling the caller cancels
    `work` too."""
    task = asyncio.ensure_future(work)
    aborted = asyncio.ensure_future(abort.wait())
    try:
        await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        aborted.cancel()
        task.cancel()  # nothing to a task that is done
    if task.done() and not task.cancelled():
        return task.result()
    await asyncio.wait({task})  # its cleanup; a cancellation of the caller still reaches it
    if not task.cancelled():
        task.exception()  # what work given up on raised is nobody's error
    return None
