"""Notification `idle_prompt`, as Claude Code sends it: the agent finished a turn in a
front-end that waits for the person (the app), who has neither typed nor sent anything
for `idle_notification` seconds since. One wait per session; typing or a prompt ends it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

IDLE_MESSAGE = "agent-tui is waiting for your input"
"""The notification's `message` (Claude Code's says "Claude is waiting for your input")."""
IDLE_TITLE = "Waiting for input"


class IdleWatch:
    """The sessions whose turn ended while the person is away, each until it is told."""

    def __init__(
        self,
        busy: Callable[[str], bool],
        after: Callable[[], float],
        tell: Callable[[str], Awaitable[None]],
    ) -> None:
        self._busy, self._after, self._tell = busy, after, tell
        """Whether a session's loop runs; `idle_notification` (seconds); the notification."""
        self._waits: dict[str, asyncio.Task[None]] = {}
        self._after_run: set[str] = set()
        """Sessions whose end a front-end showed while their run still went on (its Stop
        hooks): the wait starts when the run ends."""

    def await_person(self, session_id: str) -> None:
        """A front-end that waits for the person (the app) shows a turn's end: unless
        they type (`stop`) or something is sent first, Notification hooks hear
        `idle_prompt` after `idle_notification` seconds, as Claude Code's do. Shown while
        the run still goes on (its Stop hooks), the wait starts when it ends."""
        if self._busy(session_id):
            self._after_run.add(session_id)  # the wait starts when the run ends
            return
        self.stop(session_id)
        if (after := self._after()) <= 0:
            return
        wait = asyncio.create_task(self._tell_after(session_id, after), name=f"idle-{session_id}")
        self._waits[session_id] = wait
        wait.add_done_callback(lambda done: self._forget(session_id, done))

    def run_ended(self, session_id: str) -> None:
        """The session's run ended: the wait asked for meanwhile starts now."""
        if session_id in self._after_run:
            self._after_run.discard(session_id)
            self.await_person(session_id)

    def stop(self, session_id: str) -> None:
        self._after_run.discard(session_id)
        if (wait := self._waits.pop(session_id, None)) is not None:
            wait.cancel()

    def stop_all(self) -> None:
        for session_id in list(self._waits):
            self.stop(session_id)

    def waiting(self, session_id: str) -> bool:
        """Whether the person would be told of this session's idle turn."""
        return session_id in self._waits

    async def _tell_after(self, session_id: str, after: float) -> None:
        await asyncio.sleep(after)
        if not self._busy(session_id):  # else sent from another view or process meanwhile
            await self._tell(session_id)

    def _forget(self, session_id: str, done: asyncio.Task[None]) -> None:
        if self._waits.get(session_id) is done:
            del self._waits[session_id]
