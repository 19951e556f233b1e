"""What each session the app has open is doing, for the person who looks at one of them:
working, waiting for you (a permission, a plan to approve), done, failed.

Fed the engine's events (`follow`) and the permission questions the app holds back
(`asking`, `answered`); says when a session that is not on screen needs the person or has
finished (`Attention`), and which one to jump to next (`next_waiting`). No Textual here:
the sidebar's strip, the session list and the app's notifications read it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # part of the app's first frame: the events' models come later
    from agent_tui.events import Event

State = Literal["working", "waiting", "done", "failed", "idle"]
MARK: dict[State, str] = {
    "working": "◐",
    "waiting": "!",
    "done": "✓",
    "failed": "✗",
    "idle": "·",
}
WORDS: dict[State, str] = {"waiting": "waiting for you"}
"""How a state is said where its name alone does not say it."""


@dataclass
class Entry:
    session_id: str
    title: str = ""
    directory: str = ""
    busy: bool = False
    failed: bool = False
    """The newest turn ended with an error."""
    finished: bool = False
    """A turn ran and ended since the app opened the session."""
    asks: list[str] = field(default_factory=list)
    """What it waits for the person to answer, oldest first (`permission: bash`, `plan`)."""
    since: float = field(default_factory=time.monotonic)

    @property
    def state(self) -> State:
        if self.asks:
            return "waiting"
        if self.busy:
            return "working"
        if self.failed:
            return "failed"
        return "done" if self.finished else "idle"


@dataclass(frozen=True)
class Attention:
    """A session not on screen needs the person, or has finished."""

    session_id: str
    state: State
    title: str
    reason: str


class SessionBoard:
    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._parents: dict[str, str] = {}
        self.shown: str | None = None

    def root(self, session_id: str) -> str:
        """The session the person started that `session_id` belongs to (a subagent's own
        session belongs to its parent's)."""
        seen = {session_id}
        while (parent := self._parents.get(session_id)) is not None and parent not in seen:
            seen.add(parent)
            session_id = parent
        return session_id

    def entry(self, session_id: str) -> Entry:
        root = self.root(session_id)
        return self._entries.setdefault(root, Entry(root))

    def known(self, session_id: str) -> bool:
        """Whether the app has seen the session work (or shown it)."""
        return self.root(session_id) in self._entries

    def state(self, session_id: str) -> State:
        found = self._entries.get(self.root(session_id))
        return found.state if found is not None else "idle"

    def entries(self) -> list[Entry]:
        """The sessions with something to show, the newest change first."""
        entries = self._entries.values()
        listed = [e for e in entries if e.state != "idle" or e.session_id == self.shown]
        return sorted(listed, key=lambda e: e.since, reverse=True)

    def show(self, session_id: str | None) -> None:
        """The person looks at `session_id` now (None: a new session not saved yet)."""
        self.shown = session_id

    def follow(self, event: Event) -> Attention | None:
        """Take in an engine event; what the person should hear of, if anything."""
        if event.type == "session.updated":
            session = event.session
            if session.parent_id is not None:
                self._parents[session.id] = session.parent_id
                return None
            entry = self.entry(session.id)
            entry.title, entry.directory = session.title, session.directory
            return None
        if event.type == "plan.proposed":
            return self.asking(event.session_id, "plan")
        if event.type not in ("session.status", "session.error"):
            return None
        if self.root(event.session_id) != event.session_id:
            return None  # a subagent's steps and errors: its parent works meanwhile
        entry = self.entry(event.session_id)
        if event.type == "session.error":
            entry.failed = True
            return None
        return self._status(entry, event.status != "idle")

    def _status(self, entry: Entry, busy: bool) -> Attention | None:
        if busy == entry.busy:
            return None
        entry.busy, entry.since = busy, time.monotonic()
        if busy:
            entry.failed = False
            return None
        entry.finished = True
        return self._heard(entry, "failed" if entry.failed else "finished")

    def asking(self, session_id: str, what: str) -> Attention | None:
        """The session waits for the person's answer to `what`."""
        entry = self.entry(session_id)
        entry.asks.append(what)
        entry.since = time.monotonic()
        return self._heard(entry, f"waits for you: {what}")

    def answered(self, session_id: str, what: str) -> None:
        entry = self.entry(session_id)
        if what in entry.asks:
            entry.asks.remove(what)
            entry.since = time.monotonic()

    def _heard(self, entry: Entry, reason: str) -> Attention | None:
        if entry.session_id == self.shown:
            return None
        return Attention(entry.session_id, entry.state, entry.title or "(untitled)", reason)

    def next_waiting(self) -> str | None:
        """The session to jump to: the one waiting longest for the person (not the one on
        screen), else None."""
        waiting = [e for e in self._entries.values() if e.asks and e.session_id != self.shown]
        return min(waiting, key=lambda e: e.since).session_id if waiting else None
