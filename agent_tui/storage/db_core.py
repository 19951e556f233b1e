"""What the Database's query mixins may use of its core (declared for type checkers)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import aiosqlite

from agent_tui.records import Message
from agent_tui.storage.history_cache import HistoryCache


class DatabaseCore:
    """Implemented by `Database`: the shared connection, its lock and the dirty maps."""

    _path: Path
    _history: HistoryCache

    if TYPE_CHECKING:

        def _transaction(
            self, *, write: bool = True
        ) -> AbstractAsyncContextManager[aiosqlite.Connection]: ...

        async def _fetch(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]: ...

        async def flush(self) -> None: ...

        async def get_message(self, message_id: str) -> Message: ...

        def _forget(self, message_ids: Iterable[str]) -> None: ...
