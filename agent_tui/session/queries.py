"""What views read of the sessions: the queries of the engine facade (DESIGN.md), so
that no view reaches storage."""

from __future__ import annotations

from dataclasses import dataclass

from agent_tui.context import preparing
from agent_tui.engine_context import EngineContext
from agent_tui.records import MessageWithParts, Session, SessionSummary
from agent_tui.storage.session_lock import LockHolder
from agent_tui.storage.sessions import session_tree


@dataclass
class Listed:
    """A session as a list of sessions shows it."""

    session: Session
    depth: int
    """Under the session that started it (a subagent's): 1 and more."""
    summary: SessionSummary
    preparer: LockHolder | None
    """Who writes its summary meanwhile (None: nobody)."""


class Queries:
    def __init__(self, ctx: EngineContext) -> None:
        self._ctx = ctx
        db = ctx.db
        self.session = db.get_session
        self.find_session = db.find_session_by_prefix
        """By id or a unique prefix of it."""
        self.latest_session = db.latest_session
        self.list_sessions = db.list_sessions
        self.delete_session = db.delete_session
        self.messages = db.all_messages
        self.recent_messages = db.recent_messages
        self.message = db.get_message
        self.todos = db.get_todos
        self.export = db.export_session

    async def listed(self, directory: str | None, limit: int) -> list[Listed]:
        """The newest `limit` sessions a person started (in `directory`, or anywhere),
        each followed by its subagents' sessions."""
        db = self._ctx.db
        roots = await db.list_sessions(directory, limit=limit, roots_only=True)
        found = roots + await db.descendants(s.id for s in roots)
        summaries = await db.session_summaries([s.id for s in found])
        return [
            Listed(session, depth, summaries[session.id], preparing.holder(self._ctx, session.id))
            for session, depth in session_tree(found)
        ]

    async def since_summary(self, session_id: str) -> list[MessageWithParts]:
        """The session's messages after the summary in force: what its model reads."""
        db = self._ctx.db
        session = await db.get_session(session_id)
        return await db.messages(session.id, since_id=session.history_start)
