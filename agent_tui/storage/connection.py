"""Opening the database file without ever damaging a file that is not ours."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from pathlib import Path

import aiosqlite

from agent_tui.errors import StorageError
from agent_tui.storage import schema, sqlite_errors

log = logging.getLogger(__name__)

SQLITE_HEADER = b"SQLite format 3\x00"


def _precheck(path: Path) -> None:
    """Blocking checks done before SQLite sees the file (run in a worker thread).

    SQLite itself would only report "file is not a database" on the first read; checking
    the header first means a foreign file is never even opened for writing.
    """
    if path.exists() and not path.is_file():
        kind = "a directory" if path.is_dir() else "not a regular file"
        raise sqlite_errors.unreadable(path, f"the path is {kind}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        detail = f"cannot create the directory {path.parent} ({exc.strerror or exc})"
        raise sqlite_errors.unreadable(path, detail) from exc
    if not path.exists():
        return
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise sqlite_errors.unreadable(path, exc.strerror or str(exc)) from exc
    if header and header != SQLITE_HEADER:
        raise sqlite_errors.not_a_database(path, "it does not start with the SQLite header")
    if not os.access(path, os.W_OK):
        raise sqlite_errors.unreadable(path, "the file is not writable")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise sqlite_errors.unreadable(path, f"the directory {path.parent} is not writable")


LOCK_RETRY_SECONDS = 0.05


async def _prepare(conn: aiosqlite.Connection, path: Path, busy_timeout_ms: int) -> None:
    """WAL, pragmas and migrations. Two processes creating a new file at the same moment
    can get SQLITE_BUSY without the busy handler (switching to WAL needs an exclusive
    lock), so lock errors here are retried until the busy timeout has passed."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    while True:
        try:
            rows = await conn.execute_fetchall("PRAGMA journal_mode = WAL")
            if str(rows[0][0]).lower() != "wal":
                log.warning("%s: WAL journal mode unavailable (got %s)", path, rows[0][0])
            await conn.execute("PRAGMA synchronous = NORMAL")
            await conn.execute("PRAGMA foreign_keys = ON")
            await schema.migrate(conn, path)
            return
        except (sqlite3.OperationalError, StorageError) as exc:
            if not schema.is_lock(exc) or time.monotonic() > deadline:
                raise
            await asyncio.sleep(LOCK_RETRY_SECONDS)


async def open_connection(path: Path, busy_timeout_ms: int) -> aiosqlite.Connection:
    """Connect, validate, set the PRAGMAs and migrate; every failure is a StorageError.

    Only read statements run until the file is known to be an agent-tui database no
    newer than this code: a foreign or newer file is left byte for byte as it was.
    """
    await asyncio.to_thread(_precheck, path)
    try:
        # isolation_level=None: autocommit; transactions are explicit BEGIN/COMMIT.
        conn = await aiosqlite.connect(path, isolation_level=None)
    except sqlite3.Error as exc:
        raise sqlite_errors.translate(exc, path) from exc
    try:
        conn.row_factory = sqlite3.Row
        await conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        await schema.check(conn, path)
        await _prepare(conn, path, busy_timeout_ms)
    except BaseException as exc:
        with contextlib.suppress(Exception):
            await conn.close()
        if isinstance(exc, sqlite3.Error):
            raise sqlite_errors.translate(exc, path) from exc
        raise
    return conn
