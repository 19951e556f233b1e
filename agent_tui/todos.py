"""The todo tools' store: the session's list in the database, each change announced."""

from __future__ import annotations

from collections.abc import Callable

from agent_tui.events import Event, TodosUpdated
from agent_tui.records import TodoItem
from agent_tui.storage.db import Database


class SessionTodos:
    """Implements tool/base.py `TodoStore` for the engine."""

    def __init__(self, db: Database, publish: Callable[[Event], None]) -> None:
        self._db = db
        self._publish = publish

    async def get_todos(self, session_id: str) -> list[TodoItem]:
        return await self._db.get_todos(session_id)

    async def set_todos(self, session_id: str, items: list[TodoItem]) -> None:
        await self._db.set_todos(session_id, items)
        self._publish(TodosUpdated(session_id=session_id, todos=items))
