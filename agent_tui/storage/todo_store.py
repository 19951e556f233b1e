"""The session's todo list: one row per session in the `todo` table, the items as JSON.

A table of its own rather than a field of the session's `data` column: `update_session`
rewrites that column from whatever copy of the session it is given, and a copy read
before a todowrite must not take the list back.
"""

from __future__ import annotations

import json

from pydantic import TypeAdapter

from agent_tui.ids import now_ms
from agent_tui.records import TodoItem
from agent_tui.storage.db_core import DatabaseCore

TODO_MIGRATION: tuple[str, ...] = (
    """CREATE TABLE todo (
        session_id TEXT PRIMARY KEY REFERENCES session(id) ON DELETE CASCADE,
        items TEXT NOT NULL DEFAULT '[]',
        updated INTEGER NOT NULL
    )""",
)
_ITEMS = TypeAdapter(list[TodoItem])
_UPSERT = (
    "INSERT INTO todo (session_id, items, updated) VALUES (?, ?, ?) "
    "ON CONFLICT(session_id) DO UPDATE SET items = excluded.items, updated = excluded.updated"
)


class TodoQueries(DatabaseCore):
    """Todo methods of Database."""

    async def get_todos(self, session_id: str) -> list[TodoItem]:
        found = await self._fetch("SELECT items FROM todo WHERE session_id = ?", (session_id,))
        return _ITEMS.validate_json(found[0]["items"]) if found else []

    async def set_todos(self, session_id: str, items: list[TodoItem]) -> None:
        """Replace the session's list (an empty list clears it)."""
        data = json.dumps([item.model_dump(mode="json") for item in items])
        async with self._transaction() as conn:
            await conn.execute(_UPSERT, (session_id, data, now_ms()))
