"""What the person sends reaches the session in the order it was typed.

Each message, `!command` and `/compact` runs in its own worker. Typed faster than a
message is saved (a script driving the terminal, a paste), a later one could otherwise
be saved first, or both could create a session. Each submission waits until the one
before it has saved its message (the engine sets `saved`), not until it is answered:
a message sent while the agent works is still queued into the running turn.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


class Submissions:
    def __init__(self) -> None:
        self._last: asyncio.Event | None = None

    async def run(self, work: Callable[[asyncio.Event], Awaitable[T]]) -> T:
        """Run `work` after the previous submission saved its message; `work` sets the
        event it is given once its own is saved (it is set anyway when `work` ends)."""
        previous, saved = self._last, asyncio.Event()
        self._last = saved
        try:
            if previous is not None:
                await previous.wait()
            return await work(saved)
        finally:
            saved.set()
