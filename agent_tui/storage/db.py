"""The Database: one aiosqlite connection, batched streaming writes, history reads.

Writes of messages and parts go through dirty maps keyed by id, so a part updated by
a thousand stream deltas costs one row write per flush. A background task flushes
every `flush_interval` seconds in one transaction; `flush()` writes now. Every read
of messages or parts flushes first, so reads see everything written before them.
Sessions are small and rare, so they are written at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import aiosqlite

from agent_tui.errors import NotFoundError, StorageError
from agent_tui.ids import now_ms
from agent_tui.records import Message, MessageWithParts, Part, SessionExport
from agent_tui.storage import rows, sqlite_errors
from agent_tui.storage.connection import open_connection
from agent_tui.storage.history_cache import HistoryCache
from agent_tui.storage.pin_store import PinQueries
from agent_tui.storage.prepared_store import PreparedQueries
from agent_tui.storage.recovery import RecoveryQueries
from agent_tui.storage.search import INDEX_PART, SearchQueries, searchable_text
from agent_tui.storage.sessions import SessionQueries
from agent_tui.storage.todo_store import TodoQueries

log = logging.getLogger(__name__)
Row = TypeVar("Row", bound=tuple[Any, ...])

DEFAULT_FLUSH_INTERVAL = 0.05
"""Seconds between background flushes: the most a crash can lose."""
DEFAULT_BUSY_TIMEOUT_MS = 5000
"""How long a write waits for another process's transaction before giving up."""
FLUSH_RETRY_DELAY = 1.0
"""Seconds before a failed background flush is tried again."""


@dataclass(frozen=True)
class WriterStats:
    """Counters for bench/: writer busy % is flush_seconds over the elapsed time."""

    flushes: int = 0
    rows_written: int = 0
    flush_seconds: float = 0.0


class Database(
    SessionQueries, RecoveryQueries, SearchQueries, TodoQueries, PreparedQueries, PinQueries
):
    """The agent-tui session store. Create with `await Database.open(path)`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path, flush_interval: float) -> None:
        self._conn = conn
        self._path = path
        self._flush_interval = flush_interval
        self._lock = asyncio.Lock()
        self._dirty_messages: dict[str, Message] = {}
        self._dirty_parts: dict[str, Part] = {}
        self._wake = asyncio.Event()
        self._dropped: list[str] = []
        self._stats = WriterStats()
        self._closed = False
        self._flusher: asyncio.Task[None] | None = None
        self._backfill: asyncio.Task[int] | None = None
        self._history = HistoryCache()

    @classmethod
    async def open(
        cls,
        path: Path,
        *,
        flush_interval: float = DEFAULT_FLUSH_INTERVAL,
        busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS,
    ) -> Database:
        """Open (creating if needed) and migrate the database at `path`.

        Raises StorageError, leaving the file untouched, when it is not an agent-tui
        database, is newer than this code, is unreadable, or is locked.
        """
        path = Path(path).expanduser()
        conn = await open_connection(path, busy_timeout_ms)
        db = cls(conn, path, flush_interval)
        db._flusher = asyncio.create_task(db._flush_loop(), name=f"agent-tui flush {path}")
        db._backfill = asyncio.create_task(db._backfill_quietly(), name=f"agent-tui index {path}")
        return db

    async def _backfill_quietly(self) -> int:
        """The search index for parts stored before it existed; a failure only means
        those parts are not found by recall yet (the next open tries again)."""
        try:
            return await self.backfill_search_index()
        except (StorageError, sqlite3.Error) as exc:
            log.warning("search index backfill of %s stopped: %s", self._path, exc)
            return 0

    async def close(self) -> None:
        """Flush pending writes and close. Safe to call twice."""
        if self._closed:
            return
        try:
            for task in (self._backfill, self._flusher):
                if task is not None and not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
            await self.flush()
        finally:
            self._closed = True
            await self._conn.close()

    async def __aenter__(self) -> Database:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def path(self) -> Path:
        return self._path

    @property
    def stats(self) -> WriterStats:
        return self._stats

    # ---- transactions -----------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise StorageError(f"The database {self._path} is already closed.")

    @contextlib.asynccontextmanager
    async def _transaction(self, *, write: bool = True) -> AsyncIterator[aiosqlite.Connection]:
        """Serialize use of the shared connection and run the body in one transaction."""
        self._check_open()
        async with self._lock, self._locked_transaction(write=write) as conn:
            yield conn

    @contextlib.asynccontextmanager
    async def _locked_transaction(self, *, write: bool) -> AsyncIterator[aiosqlite.Connection]:
        # IMMEDIATE takes the write lock up front, so busy_timeout applies to it instead
        # of failing at once when a read transaction later tries to write.
        conn = self._conn
        try:
            await conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
        except sqlite3.Error as exc:
            raise sqlite_errors.translate(exc, self._path) from exc
        except BaseException:
            # Cancelled while BEGIN waited on the worker thread: it may still succeed
            # there, and a transaction left open would break every later BEGIN.
            await self._rollback_quietly()
            raise
        try:
            yield conn
            await conn.execute("COMMIT")
        except BaseException as exc:
            await self._rollback_quietly()
            if isinstance(exc, sqlite3.Error):
                raise sqlite_errors.translate(exc, self._path) from exc
            raise

    async def _rollback_quietly(self) -> None:
        """ROLLBACK whatever is open. aiosqlite runs statements in order on one thread,
        so this runs after any statement still in flight from a cancelled await."""
        with contextlib.suppress(sqlite3.Error):
            await self._conn.execute("ROLLBACK")

    async def _fetch(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """One read statement (atomic on its own, so no BEGIN/COMMIT round trips)."""
        self._check_open()
        async with self._lock:
            try:
                return list(await self._conn.execute_fetchall(sql, tuple(params)))
            except sqlite3.Error as exc:
                raise sqlite_errors.translate(exc, self._path) from exc

    # ---- batched writes ---------------------------------------------------------------

    async def upsert_message(self, info: Message, *, flush: bool = False) -> None:
        """Save a message; with flush=False it is written by the next batch."""
        self._check_open()
        self._dirty_messages[info.id] = info
        self._history.on_message(info)
        await self._after_write(flush)

    async def upsert_part(self, part: Part, *, flush: bool = False) -> None:
        """Save a part; repeated calls before a flush cost one row write (latest wins).

        The model is serialized at flush time, so it must not be mutated from another
        thread. Use flush=True for state transitions that must be on disk now.
        """
        self._check_open()
        self._dirty_parts[part.id] = part
        self._history.on_part(part)
        await self._after_write(flush)

    async def _after_write(self, flush: bool) -> None:
        if flush:
            await self.flush()
        else:
            self._wake.set()

    async def flush(self) -> None:
        """Write every pending message and part now, in one transaction.

        Raises StorageError if the write fails (the changes stay pending and are tried
        again) or if rows were dropped by an earlier batch because they could not be
        saved at all (e.g. a part whose message was never saved).
        """
        await self._flush_dirty()
        if self._dropped:
            dropped, self._dropped = self._dropped, []
            raise StorageError(
                f"agent-tui could not save {len(dropped)} change(s) to {self._path}: "
                f"{'; '.join(dropped[:5])}. This is a bug in agent-tui; please report it."
            )

    async def _flush_dirty(self) -> None:
        self._check_open()
        # Always through the lock, even with nothing dirty: a flush in progress has taken
        # the dirty maps, and "flushed" must mean that one has committed too.
        async with self._lock:
            messages, self._dirty_messages = self._dirty_messages, {}
            parts, self._dirty_parts = self._dirty_parts, {}
            if not messages and not parts:
                return
            started = time.perf_counter()
            # Serialized before BEGIN, so the file's write lock is held only for SQL.
            message_rows = self._serialize(messages, rows.message_row)
            part_rows = self._serialize(parts, rows.part_row)
            index_rows = [
                (text, part.session_id, part.id)
                for part in parts.values()
                if (text := searchable_text(part))
            ]
            touched = {info.session_id for info in messages.values()}
            try:
                async with self._locked_transaction(write=True) as conn:
                    written = await self._write_batch(conn, message_rows, part_rows, touched)
                    await conn.executemany(INDEX_PART, index_rows)
            except BaseException:
                self._requeue(messages, parts)
                raise
            self._stats = WriterStats(
                flushes=self._stats.flushes + 1,
                rows_written=self._stats.rows_written + written,
                flush_seconds=self._stats.flush_seconds + time.perf_counter() - started,
            )

    async def _write_batch(
        self,
        conn: aiosqlite.Connection,
        message_rows: list[rows.MessageRow],
        part_rows: list[rows.PartRow],
        touched: set[str],
    ) -> int:
        """Messages before parts (parts reference them); returns the rows written."""
        written = await self._upsert_rows(conn, rows.UPSERT_MESSAGE, message_rows, "message")
        written += await self._upsert_rows(conn, rows.UPSERT_PART, part_rows, "part")
        # Activity on a session moves it to the top of `agent-tui sessions`.
        now = now_ms()
        await conn.executemany(rows.BUMP_SESSION, [(now, sid) for sid in touched])
        return written

    def _serialize(self, models: dict[str, Any], to_row: Callable[[Any], Row]) -> list[Row]:
        """Rows for the models; one that cannot be serialized is dropped and reported."""
        result = []
        for key, model in list(models.items()):
            try:
                result.append(to_row(model))
            except (ValueError, TypeError) as exc:  # unserializable metadata, say
                del models[key]
                self._dropped.append(f"{key} ({exc})")
                log.error("cannot serialize %s: %s", key, exc)
        return result

    async def _upsert_rows(
        self, conn: aiosqlite.Connection, sql: str, batch: Sequence[tuple[Any, ...]], what: str
    ) -> int:
        """executemany; if a row breaks a constraint, save the others one by one."""
        with contextlib.suppress(sqlite3.IntegrityError):
            await conn.executemany(sql, batch)
            return len(batch)
        written = 0
        for row in batch:
            try:
                await conn.execute(sql, row)
                written += 1
            except sqlite3.IntegrityError as exc:
                self._dropped.append(f"{what} {row[0]} ({exc})")
                log.error("dropped %s %s: %s", what, row[0], exc)
        return written

    def _requeue(self, messages: dict[str, Message], parts: dict[str, Part]) -> None:
        """Put back changes of a failed flush, unless a newer version arrived since."""
        self._dirty_messages = {**messages, **self._dirty_messages}
        self._dirty_parts = {**parts, **self._dirty_parts}
        self._wake.set()

    def _forget(self, message_ids: Iterable[str]) -> None:
        """Drop pending writes of deleted rows, so a flush does not bring them back."""
        gone = set(message_ids)
        self._history.forget(all_sessions=True)
        self._dirty_messages = {k: m for k, m in self._dirty_messages.items() if k not in gone}
        self._dirty_parts = {k: p for k, p in self._dirty_parts.items() if p.message_id not in gone}

    async def _flush_loop(self) -> None:
        while True:
            await self._wake.wait()
            await asyncio.sleep(self._flush_interval)
            self._wake.clear()
            try:
                # Shielded: close() cancels this task, and a flush cut off halfway would
                # only be redone; close() waits for it through the lock instead.
                await asyncio.shield(self._flush_dirty())
            except StorageError as exc:
                log.warning("background flush failed, retrying: %s", exc)
                await asyncio.sleep(FLUSH_RETRY_DELAY)
            except Exception:
                log.exception("background flush of %s failed, retrying", self._path)
                await asyncio.sleep(FLUSH_RETRY_DELAY)

    # ---- reads ------------------------------------------------------------------------

    async def get_message(self, message_id: str) -> Message:
        return rows.parse_message(await self._stored("message", "info", message_id))

    async def get_part(self, part_id: str) -> Part:
        return rows.parse_part(await self._stored("part", "data", part_id))

    async def _stored(self, table: str, column: str, row_id: str) -> str:
        """The JSON column of one row, after a flush (NotFoundError naming the id)."""
        await self.flush()
        found = await self._fetch(f"SELECT {column} FROM {table} WHERE id = ?", (row_id,))
        if not found:
            raise NotFoundError(f"No {table} with id {row_id!r} in {self._path}.")
        return found[0][0]

    async def messages(
        self, session_id: str, *, since_id: str | None = None
    ) -> list[MessageWithParts]:
        """Messages with id >= since_id (all if None) in id order, each with its parts.

        Both queries are range scans of the (session_id, id) indexes, so history
        before since_id (the compaction boundary) is never read. Parsed results are
        cached and kept current by this process's writes (see history_cache.py); the
        returned models are shared with the cache: update them through upsert_*.
        """
        lower = since_id or ""
        version = await self._fetch("PRAGMA data_version")
        self._history.check_version(version[0][0])
        cached = self._history.get(session_id, lower)
        if cached is not None:
            return cached
        await self.flush()
        async with self._transaction(write=False) as conn:
            message_rows = await conn.execute_fetchall(rows.HISTORY_MESSAGES, (session_id, lower))
            part_rows = await conn.execute_fetchall(rows.HISTORY_PARTS, (session_id, lower))
        result = rows.history(message_rows, part_rows)
        self._history.put(session_id, lower, result)
        # Writes made while this read waited are in the dirty maps, not in the rows.
        for info in list(self._dirty_messages.values()):
            self._history.on_message(info)
        for part in list(self._dirty_parts.values()):
            self._history.on_part(part)
        return list(self._history.get(session_id, lower) or result)

    async def all_messages(self, session_id: str) -> list[MessageWithParts]:
        return await self.messages(session_id)

    async def recent_messages(
        self, session_id: str, limit: int
    ) -> tuple[list[MessageWithParts], bool]:
        """The newest `limit` messages with their parts, and whether that is all of them.

        Reads (and parses) only those: opening a long session shows its newest page
        before the whole history is read.
        """
        await self.flush()
        newest = await self._fetch(rows.NEWEST_MESSAGE_IDS, (session_id, limit + 1))
        if len(newest) <= limit:
            return await self.messages(session_id), True
        return await self.messages(session_id, since_id=newest[limit - 1][0]), False

    async def export_session(self, session_id: str) -> SessionExport:
        session = await self.get_session(session_id)  # flushes first
        return SessionExport(
            session=session,
            messages=await self.messages(session_id),
            prepared=await self.prepared_summaries(session_id),
        )
