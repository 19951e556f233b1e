"""The schema as a list of forward migrations, and the checks run before using a file.

Migration N (1-based) takes a database from version N-1 to N. Each one runs in its own
transaction together with the version bump, so a failed upgrade leaves the file as it
was. Never edit a released migration: append a new one.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

import aiosqlite

from agent_tui.errors import StorageError
from agent_tui.storage import sqlite_errors
from agent_tui.storage.prepared_store import PREPARED_MIGRATION
from agent_tui.storage.search import FTS_MIGRATION
from agent_tui.storage.todo_store import TODO_MIGRATION

MigrationFn = Callable[[aiosqlite.Connection], Awaitable[None]]
Migration = Sequence[str] | MigrationFn
"""SQL statements run in order, or a coroutine function given the open connection."""

_V1: tuple[str, ...] = (
    """CREATE TABLE session (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL DEFAULT '',
        directory TEXT NOT NULL,
        parent_id TEXT,
        created INTEGER NOT NULL,
        updated INTEGER NOT NULL,
        compaction_id TEXT,
        tail_start_id TEXT,
        data TEXT NOT NULL DEFAULT '{}'
    )""",
    """CREATE TABLE message (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        info TEXT NOT NULL
    )""",
    """CREATE TABLE part (
        id TEXT PRIMARY KEY,
        message_id TEXT NOT NULL REFERENCES message(id) ON DELETE CASCADE,
        session_id TEXT NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX message_session ON message(session_id, id)",
    "CREATE INDEX part_session_message ON part(session_id, message_id, id)",
    # Cascading deletes from message look parts up by message_id.
    "CREATE INDEX part_message ON part(message_id)",
    "CREATE INDEX session_directory_updated ON session(directory, updated)",
)

# V2: the full-text index of the recall tool (storage/search.py).
# V3: the sessions' todo lists (storage/todo_store.py).
MIGRATIONS: list[Migration] = [_V1, FTS_MIGRATION, TODO_MIGRATION, PREPARED_MIGRATION]


def latest_version() -> int:
    return len(MIGRATIONS)


async def _tables(conn: aiosqlite.Connection) -> set[str]:
    rows = await conn.execute_fetchall("SELECT name FROM sqlite_master WHERE type = 'table'")
    return {row[0] for row in rows}


async def _version(conn: aiosqlite.Connection) -> int:
    rows = await conn.execute_fetchall("SELECT max(version) FROM schema_version")
    return int(rows[0][0] or 0)


async def check(conn: aiosqlite.Connection, path: Path) -> int:
    """Read-only check that `path` is ours and not too new; returns its version.

    Runs before any statement that could change the file, so a foreign or newer
    database is never touched. Version 0 means an empty database (or a new file).
    """
    tables = await _tables(conn)
    if "schema_version" not in tables:
        if tables:
            raise sqlite_errors.foreign_database(path)
        return 0
    version = await _version(conn)
    if version > latest_version():
        raise sqlite_errors.newer_schema(path, version, latest_version())
    return version


async def _apply(conn: aiosqlite.Connection, migration: Migration) -> None:
    if callable(migration):
        await migration(conn)
        return
    for statement in migration:
        await conn.execute(statement)


async def migrate(conn: aiosqlite.Connection, path: Path) -> int:
    """Apply every migration the database lacks; returns the resulting version.

    The connection must be in autocommit mode (isolation_level=None). The version is
    re-read inside each write transaction, so two processes opening a new file at the
    same moment do not both run a migration.
    """
    if await check(conn, path) == latest_version():
        return latest_version()  # the common case: no write lock needed to open
    for target, migration in enumerate(MIGRATIONS, start=1):
        await conn.execute("BEGIN IMMEDIATE")
        try:
            if "schema_version" not in await _tables(conn):
                await conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                await conn.execute("INSERT INTO schema_version (version) VALUES (0)")
            current = await _version(conn)
            if current > latest_version():
                raise sqlite_errors.newer_schema(path, current, latest_version())
            if current < target:
                await _apply(conn, migration)
                await conn.execute("UPDATE schema_version SET version = ?", (target,))
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                await conn.execute("ROLLBACK")
            if isinstance(exc, StorageError) or not isinstance(exc, Exception):
                raise
            if isinstance(exc, sqlite3.Error) and is_lock(exc):
                raise sqlite_errors.locked(path) from exc
            raise sqlite_errors.migration_failed(path, target, str(exc)) from exc
        await conn.execute("COMMIT")
    return await _version(conn)


def is_lock(exc: Exception) -> bool:
    return "locked" in str(exc).lower() or "busy" in str(exc).lower()
