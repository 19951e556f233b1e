"""What views read of the sessions: the queries of the engine facade (DESIGN.md), so
that no view reaches storage."""

from __future__ import annotations

from agent_tui.storage.db import Database


class Queries:
    def __init__(self, db: Database) -> None:
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
