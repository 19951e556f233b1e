"""Requests the warm engine keeps going after the command that sent them ended
(`ModelRequest.detachable`: a summary being prepared). The next command that sends the
same request gets what was streamed so far and follows the rest, instead of the summary
being written again from nothing (issue 41, docs/engine.md)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

KEEP_SECONDS = 900.0
"""A kept request's outcome stays this long after it finished (compaction.prepare_max_age's
default: an older summary would not be used anyway)."""

Reply = dict[str, Any]
"""`{"e": event}`, then `{"end": True}` or `{"err": error}`."""


@dataclass
class _Kept:
    replies: list[Reply] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    finished_at: float | None = None
    task: asyncio.Task[None] | None = None

    @property
    def failed(self) -> bool:
        return self.finished_at is not None and "err" in (self.replies or [{}])[-1]


_kept: dict[str, _Kept] = {}


def key(request: dict[str, Any]) -> str:
    """The same request, whichever command sends it (`detachable` itself aside)."""
    body = {k: v for k, v in request.items() if k != "detachable"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def follow(
    request: dict[str, Any], produce: Callable[[], AsyncIterator[Reply]]
) -> AsyncIterator[Reply]:
    """The replies of the request: from the one kept under its key if there is one (a
    command that ended sent it), else from `produce`, kept for the next sender. Closing
    the iterator stops following; the request itself goes on."""
    _expire()
    name = key(request)
    kept = _kept.get(name)
    if kept is None or kept.failed:  # a failed one is asked again
        kept = _kept[name] = _Kept()
        kept.task = asyncio.create_task(_run(kept, produce))
    return _replay(kept)


async def _run(kept: _Kept, produce: Callable[[], AsyncIterator[Reply]]) -> None:
    try:
        async for reply in produce():
            kept.replies.append(reply)
            kept.changed.set()
    except asyncio.CancelledError:
        kept.replies.append({"err": {"kind": "cancelled", "message": "cancelled"}})
        raise
    finally:
        kept.finished_at = time.monotonic()
        kept.changed.set()


async def _replay(kept: _Kept) -> AsyncIterator[Reply]:
    sent = 0
    while True:
        while sent < len(kept.replies):
            reply = kept.replies[sent]
            sent += 1
            yield reply
            if "e" not in reply:
                return
        if kept.finished_at is not None:
            return
        kept.changed.clear()
        if sent < len(kept.replies):
            continue
        await kept.changed.wait()


def _expire() -> None:
    now = time.monotonic()
    for name, kept in list(_kept.items()):
        if kept.finished_at is not None and now - kept.finished_at > KEEP_SECONDS:
            del _kept[name]


def count() -> int:
    """Requests kept now (`agent-tui engine` reports them)."""
    return len(_kept)
