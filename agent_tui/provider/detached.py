"""The transport of a detached request: one the relay keeps going after the command
that sent it ended (`ModelRequest.detachable`: a summary being prepared). With
`save_when_left`, the relay saves the summary itself when no command follows it to its
end (`saver`: context/prepared_left.py, wired in by the process's entry,
agent_tui/relay_process.py), and holds the session's preparation lock until then. The
next command that sends the same request gets what was streamed so far and follows the
rest, instead of the summary being written again from nothing (issue 41,
docs/relay.md). A command that cancels it (the person pressed Esc) drops it: it stops
once nobody else follows it, and is never saved."""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agent_tui.provider.stream_events import SaveWhenLeft

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
    followers: int = 0
    dropped: bool = False
    started: float = field(default_factory=time.monotonic)

    @property
    def failed(self) -> bool:
        return self.finished_at is not None and "err" in (self.replies or [{}])[-1]

    @property
    def ended(self) -> bool:
        """It streamed to its end (not an error)."""
        return "end" in (self.replies or [{}])[-1]


_kept: dict[str, _Kept] = {}


class Held(Protocol):
    def release(self) -> None: ...


class Saver(Protocol):
    """Saves a summary whose command left (context/prepared_left.py): `hold` takes the
    session's preparation lock when the request arrives (None: another holds it), `save`
    writes the summary the request streamed."""

    def hold(self, spec: SaveWhenLeft) -> Held | None: ...

    async def save(self, spec: SaveWhenLeft, replies: list[Reply], started: float) -> None: ...


find_saver: Callable[[], Saver] | None = None
"""How to get the saver, set by the process's entry (agent_tui/relay_process.py: provider/
never imports context/); called at the first request to save, so the relay listens
before importing it. None: a detached request is kept and replayed, never saved."""


LOCAL = ("detachable", "save_when_left")
"""What a command adds to the request for the relay: not part of what is asked."""


def key(request: dict[str, Any]) -> str:
    """The same request, whichever command sends it (what is only for the relay aside)."""
    body = {k: v for k, v in request.items() if k not in LOCAL}
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
    if kept is None or kept.failed or kept.dropped:  # asked again
        kept = _kept[name] = _Kept()
        kept.task = asyncio.create_task(_run(kept, produce, request.get("save_when_left")))
    return _replay(kept)


def drop(request: dict[str, Any]) -> None:
    """A command cancelled the request: it stops once nobody else follows it, unsaved."""
    kept = _kept.get(key(request))
    if kept is not None and kept.finished_at is None:
        kept.dropped = True


async def _run(
    kept: _Kept, produce: Callable[[], AsyncIterator[Reply]], save: dict[str, Any] | None
) -> None:
    from agent_tui.provider.stream_events import SaveWhenLeft

    saver = find_saver() if save is not None and find_saver is not None else None
    spec = SaveWhenLeft.model_validate(save) if saver is not None else None
    lock = saver.hold(spec) if saver is not None and spec is not None else None
    try:
        readers = 0  # the commands following it when its end came: each saves it itself
        async for reply in produce():
            kept.replies.append(reply)
            kept.changed.set()
            readers = kept.followers
        if saver and spec is not None and not readers and not kept.dropped and kept.ended:
            await saver.save(spec, kept.replies, kept.started)  # nobody else will
    except asyncio.CancelledError:
        kept.replies.append({"err": {"kind": "cancelled", "message": "cancelled"}})
        raise
    finally:
        if lock is not None:
            lock.release()
        kept.finished_at = time.monotonic()
        kept.changed.set()


async def _replay(kept: _Kept) -> AsyncIterator[Reply]:
    sent = 0
    kept.followers += 1
    try:
        while True:
            while sent < len(kept.replies):
                reply = kept.replies[sent]
                sent += 1
                yield reply
                if "e" not in reply:
                    return
            if kept.finished_at is not None:
                return
            kept.changed.clear()  # nothing came since the loop above: no await between
            await kept.changed.wait()
    finally:
        kept.followers -= 1
        if kept.dropped and kept.followers == 0 and kept.task is not None:
            kept.task.cancel()  # nobody wants it any more


def _expire() -> None:
    now = time.monotonic()
    for name, kept in list(_kept.items()):
        if kept.finished_at is not None and now - kept.finished_at > KEEP_SECONDS:
            del _kept[name]


def count() -> int:
    """Requests kept now (`agent-tui relay` reports them)."""
    return len(_kept)


def running() -> int:
    """Kept requests still under way (a leaving relay finishes them first)."""
    return sum(1 for kept in _kept.values() if kept.finished_at is None)
