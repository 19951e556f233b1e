"""Sessions working side by side in one app: the one on screen is the person's to talk
to; the others go on. A permission question of a session not on screen waits until the
person opens that session (it never covers the one they are in), and the person is told
(`Notifier`) when such a session waits for them or finishes. The sidebar's strip and the
session list show each one's state (`SessionBoard`); a key jumps to the next one waiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import PurePath
from typing import TYPE_CHECKING, TypeVar

from agent_tui.tui.session_board import MARK, WORDS, Attention, SessionBoard

if TYPE_CHECKING:
    from agent_tui.command.core import Rows
    from agent_tui.events import Event
    from agent_tui.tool.base import PermissionRequest
    from agent_tui.tui.notifier import Notifier

T = TypeVar("T")
STRIP_MAX = 6
"""Sessions the sidebar's strip lists at most."""
WORKTREES = "/.claude/worktrees/"
"""Where a session's own worktree lies (worktrees/layout.py; a path, not imported: the
strip is part of the first frame)."""


class SideBySide:
    def __init__(self, redraw: Callable[[], None]) -> None:
        self.board = SessionBoard()
        self.notifier: Notifier | None = None
        """Made once the config is read (`Conversation.start`)."""
        self._redraw = redraw
        self._opened: dict[str, asyncio.Event] = {}

    def show(self, session_id: str | None) -> None:
        """The person looks at `session_id` now: what it held back may be asked."""
        if session_id == self.board.shown:
            return
        self.board.show(session_id)
        if session_id is not None and (opened := self._opened.pop(session_id, None)):
            opened.set()
        self._redraw()

    def follow(self, event: Event) -> None:
        self._heard(self.board.follow(event))
        if event.type in ("session.status", "session.updated", "plan.proposed"):
            self._redraw()

    def _heard(self, attention: Attention | None) -> None:
        if attention is not None and self.notifier is not None:
            self.notifier.tell(attention, self.board.entry(attention.session_id).directory)

    async def ask(self, request: PermissionRequest, on_screen: Callable[[], Awaitable[T]]) -> T:
        """Ask `request` once its session is on screen (at once if it is, or if it is no
        session the app has seen: a question of the start, before any is shown)."""
        root = self.board.root(request.session_id)
        if root == self.board.shown or not self.board.known(root):
            return await on_screen()
        what = f"permission: {request.tool}"
        self._heard(self.board.asking(root, what))
        self._redraw()
        try:
            while self.board.shown != root:
                await self._opened.setdefault(root, asyncio.Event()).wait()
            return await on_screen()
        finally:
            self.answered(root, what)

    def answered(self, session_id: str, what: str) -> None:
        self.board.answered(session_id, what)
        self._redraw()

    def strip(self) -> str:
        """The sidebar's lines: each session working, waiting, done or failed here."""
        entries = self.board.entries()
        if not any(e.session_id != self.board.shown for e in entries):
            return ""  # one session: the rest of the sidebar says it all
        lines = []
        for entry in entries[:STRIP_MAX]:
            here = "▸" if entry.session_id == self.board.shown else " "
            title, state = (entry.title or "(untitled)")[:22], entry.state
            lines.append(f"{here}{MARK[state]} {title} — {WORDS.get(state, state)}")
            if WORKTREES in entry.directory:  # which checkout it works in (-w, /new -w)
                lines.append(f"   ⎇ {PurePath(entry.directory).name}")
        return "\n".join(lines)

    def decorate(self, rows: Rows) -> Rows:
        """The session list with the state of each session working beside the one on
        screen (whose own state the screen shows)."""
        if rows.kind != "sessions":
            return rows
        listed = []
        for row in rows.rows:
            state = self.board.state(row.id)
            if state != "idle" and row.id != self.board.shown:
                row = replace(row, detail=f"{MARK[state]} {WORDS.get(state, state)} · {row.detail}")
            listed.append(row)
        return replace(rows, rows=listed)
