"""Session queries of the Database: create, find, list, update, delete, stats, import."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agent_tui import ids
from agent_tui.errors import NotFoundError, StorageError
from agent_tui.ids import now_ms
from agent_tui.records import (
    AssistantMessage,
    Session,
    SessionExport,
    SessionSummary,
    Worktree,
)
from agent_tui.storage import rows
from agent_tui.storage.db_core import DatabaseCore
from agent_tui.storage.search import INDEX_PART, searchable_text

FIND_HINT = "Run `agent-tui sessions` to list session ids."
MAX_CANDIDATES = 10
"""How many matching ids an ambiguous prefix error lists."""
_IN_CHUNK = 500
"""Ids per `IN (...)` query, well under SQLite's bound-parameter limit."""

_LAST_FINISHED = (
    "SELECT info FROM message WHERE session_id = ? AND role = 'assistant' "
    "AND json_extract(info, '$.finish') IS NOT NULL ORDER BY id DESC LIMIT 1"
)
_COUNTS = (
    "SELECT session_id, count(*), "
    "total(CASE WHEN role = 'assistant' THEN json_extract(info, '$.cost') END), "
    "count(CASE WHEN role = 'assistant' AND json_extract(info, '$.summary') = 1 "
    "AND json_extract(info, '$.finish') IS NOT NULL "
    "AND coalesce(json_extract(info, '$.reverted'), 0) = 0 THEN 1 END), "
    "total(CASE WHEN role = 'assistant' THEN json_extract(info, '$.tokens.input') END), "
    "total(CASE WHEN role = 'assistant' THEN json_extract(info, '$.tokens.cache.read') END), "
    "total(CASE WHEN role = 'assistant' THEN json_extract(info, '$.tokens.cache.write') END) "
    "FROM message WHERE session_id IN ({marks}) GROUP BY session_id"
)
_PREPARED = (
    "SELECT session_id, status, count(*), total(json_extract(data, '$.cost')), "
    "total(json_extract(data, '$.tokens.input')), "
    "total(json_extract(data, '$.tokens.cache.read')), "
    "total(json_extract(data, '$.tokens.cache.write')) "
    "FROM prepared_summary WHERE session_id IN ({marks}) GROUP BY session_id, status"
)
_SUBTREE = (
    "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT session.id FROM session "
    "JOIN tree ON session.parent_id = tree.id) "
)
_DESCENDANTS = (
    "WITH RECURSIVE tree(root, id) AS (SELECT id, id FROM session WHERE id IN ({marks}) "
    "UNION ALL SELECT tree.root, session.id FROM session JOIN tree ON session.parent_id = tree.id) "
)
_CHILD_COSTS = (
    _DESCENDANTS + "SELECT tree.root, total(json_extract(message.info, '$.cost')) FROM tree "
    "JOIN message ON message.session_id = tree.id AND message.role = 'assistant' "
    "WHERE tree.id != tree.root GROUP BY tree.root"
)


class AmbiguousIdError(NotFoundError):
    """A session id prefix matches more than one session."""


class SessionQueries(DatabaseCore):
    """Session methods of Database."""

    async def create_session(
        self,
        directory: str,
        title: str = "",
        parent_id: str | None = None,
        worktree: Worktree | None = None,
    ) -> Session:
        session = Session(
            id=ids.session_id(),
            directory=str(directory),
            title=title,
            parent_id=parent_id,
            worktree=worktree,
        )
        async with self._transaction() as conn:
            await conn.execute(rows.INSERT_SESSION, rows.session_row(session))
        return session

    async def get_session(self, session_id: str) -> Session:
        await self.flush()  # pending message writes bump `updated`
        found = await self._fetch(f"{rows.SELECT_SESSION} WHERE id = ?", (session_id,))
        if not found:
            raise NotFoundError(f"No session with id {session_id!r}. {FIND_HINT}")
        return rows.parse_session(found[0])

    async def update_session(self, session: Session) -> None:
        """Save every field of `session` (its `updated` never moves backwards)."""
        async with self._transaction() as conn:
            cursor = await conn.execute(rows.UPDATE_SESSION, rows.session_row(session))
            if cursor.rowcount == 0:
                raise NotFoundError(f"No session with id {session.id!r}. {FIND_HINT}")

    async def touch_session(self, session_id: str) -> None:
        """Mark the session as active now (it moves to the top of the list)."""
        async with self._transaction() as conn:
            cursor = await conn.execute(rows.BUMP_SESSION, (now_ms(), session_id))
            if cursor.rowcount == 0:
                raise NotFoundError(f"No session with id {session_id!r}. {FIND_HINT}")

    async def delete_session(self, session_id: str) -> int:
        """Delete a session and its subagents' sessions: their messages, parts, todos,
        prepared summaries and search index rows (ACP `session/delete`). How many."""
        await self.flush()
        async with self._transaction() as conn:
            doomed = [
                row[0]
                for row in await conn.execute_fetchall(
                    f"{_SUBTREE} SELECT id FROM session WHERE id IN tree", (session_id,)
                )
            ]
            if not doomed:
                raise NotFoundError(f"No session with id {session_id!r}. {FIND_HINT}")
            marks = ", ".join("?" * len(doomed))
            messages = await conn.execute_fetchall(
                f"SELECT id FROM message WHERE session_id IN ({marks})", doomed
            )
            await conn.execute(f"DELETE FROM part_fts WHERE session_id IN ({marks})", doomed)
            await conn.execute(f"DELETE FROM session WHERE id IN ({marks})", doomed)
        self._forget(row[0] for row in messages)
        return len(doomed)

    async def list_sessions(
        self, directory: str | None = None, limit: int | None = None, *, roots_only: bool = False
    ) -> list[Session]:
        """Sessions, most recently updated first; `roots_only` skips subtask sessions."""
        await self.flush()
        where: list[str] = []
        params: list[Any] = []
        if directory is not None:
            where.append("directory = ?")
            params.append(str(directory))
        if roots_only:
            where.append("parent_id IS NULL")
        sql = rows.SELECT_SESSION
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY updated DESC, id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [rows.parse_session(row) for row in await self._fetch(sql, params)]

    async def descendants(self, session_ids: Iterable[str]) -> list[Session]:
        """The child sessions (subagents) of these sessions, their children included."""
        await self.flush()
        wanted = list(dict.fromkeys(session_ids))
        found: list[Session] = []
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start : start + _IN_CHUNK]
            sql = _DESCENDANTS.format(marks=", ".join("?" * len(chunk))) + (
                f"{rows.SELECT_SESSION} WHERE id IN (SELECT id FROM tree WHERE id != root)"
            )
            found += [rows.parse_session(row) for row in await self._fetch(sql, chunk)]
        return found

    async def latest_session(self, directory: str) -> Session | None:
        """The most recently updated top-level session in `directory` (for --continue)."""
        found = await self.list_sessions(directory, 1, roots_only=True)
        return found[0] if found else None

    async def find_session_by_prefix(self, prefix: str) -> Session:
        """The session whose id is `prefix` or starts with it (`ses_` may be left out).

        NotFoundError if none matches; AmbiguousIdError listing candidates if several do.
        """
        prefix = prefix.strip()
        if not prefix:
            raise NotFoundError(f"No session id given. {FIND_HINT}")
        tries = [prefix] if prefix.startswith("ses_") else [prefix, f"ses_{prefix}"]
        for start in tries:
            found = await self._fetch(
                f"{rows.SELECT_SESSION} WHERE id >= ? AND id < ? ORDER BY id LIMIT ?",
                (start, start + "\U0010ffff", MAX_CANDIDATES + 1),
            )
            sessions = [rows.parse_session(row) for row in found]
            exact = [s for s in sessions if s.id == start]
            if exact or len(sessions) == 1:
                return (exact or sessions)[0]
            if sessions:
                listed = "\n".join(
                    f"  {s.id}  {s.title}".rstrip() for s in sessions[:MAX_CANDIDATES]
                )
                more = "\n  ..." if len(sessions) > MAX_CANDIDATES else ""
                raise AmbiguousIdError(
                    f"Session id prefix {prefix!r} matches several sessions; "
                    f"give more characters:\n{listed}{more}"
                )
        raise NotFoundError(f"No session id starts with {prefix!r}. {FIND_HINT}")

    async def session_summaries(self, session_ids: Iterable[str]) -> dict[str, SessionSummary]:
        """Message count, compactions, total cost and last finished assistant message.

        One grouped query per 500 ids plus one indexed lookup per session; ids with no
        messages (or unknown ids) get an empty summary.
        """
        await self.flush()
        wanted = list(dict.fromkeys(session_ids))
        result = {sid: SessionSummary() for sid in wanted}
        async with self._transaction(write=False) as conn:
            for start in range(0, len(wanted), _IN_CHUNK):
                chunk = wanted[start : start + _IN_CHUNK]
                marks = ", ".join("?" * len(chunk))
                found = await conn.execute_fetchall(_COUNTS.format(marks=marks), chunk)
                for sid, count, cost, compactions, fresh, read, write in found:
                    result[sid] = SessionSummary(
                        messages=count,
                        cost=cost,
                        compactions=compactions,
                        input_tokens=int(fresh),
                        cache_read=int(read),
                        cache_write=int(write),
                    )
                found = await conn.execute_fetchall(_PREPARED.format(marks=marks), chunk)
                for sid, status, count, cost, fresh, read, write in found:
                    summary = result[sid]
                    summary.summaries_prepared += count
                    if status == "used":  # its cost and tokens are the summary message's
                        summary.summaries_used += count
                        continue
                    summary.summaries_discarded += count if status == "discarded" else 0
                    summary.cost += cost
                    summary.input_tokens += int(fresh)
                    summary.cache_read += int(read)
                    summary.cache_write += int(write)
                found = await conn.execute_fetchall(_CHILD_COSTS.format(marks=marks), chunk)
                for sid, cost in found:
                    result[sid].subtasks_cost = cost
                    result[sid].cost += cost
            for sid, summary in result.items():
                if summary.messages:
                    last = await conn.execute_fetchall(_LAST_FINISHED, (sid,))
                    if last:
                        summary.last_assistant = AssistantMessage.model_validate_json(last[0][0])
        return result

    async def import_session(self, export: SessionExport) -> Session:
        """Store an exported session with its ids unchanged, all or nothing.

        StorageError if a session with that id exists already.
        """
        self._history.forget(session_ids=[export.session.id])
        session = export.session
        strays = [m.info.id for m in export.messages if m.info.session_id != session.id]
        strays += [
            p.id
            for m in export.messages
            for p in m.parts
            if p.session_id != session.id or p.message_id != m.info.id
        ]
        if strays:
            raise StorageError(
                f"Cannot import session {session.id}: {len(strays)} message(s) or part(s) "
                f"belong to another session or message (first: {strays[0]})."
            )
        async with self._transaction() as conn:
            exists = await conn.execute_fetchall(
                "SELECT 1 FROM session WHERE id = ?", (session.id,)
            )
            if exists:
                raise StorageError(
                    f"A session with id {session.id} already exists in {self._path}; "
                    f"nothing was imported."
                )
            await conn.execute(rows.INSERT_SESSION, rows.session_row(session))
            await conn.executemany(
                rows.UPSERT_MESSAGE, [rows.message_row(m.info) for m in export.messages]
            )
            parts = [p for m in export.messages for p in m.parts]
            await conn.executemany(rows.UPSERT_PART, [rows.part_row(p) for p in parts])
            await conn.executemany(  # found by recall, like the parts written as they come
                INDEX_PART,
                [(text, p.session_id, p.id) for p in parts if (text := searchable_text(p))],
            )
            await conn.executemany(
                "INSERT INTO prepared_summary (id, session_id, status, data) VALUES (?, ?, ?, ?)",
                [
                    (p.id, session.id, p.status, p.model_dump_json())
                    for p in export.prepared
                    if p.session_id == session.id
                ],
            )
        return session


def session_tree(sessions: list[Session]) -> list[tuple[Session, int]]:
    """(session, depth) with each child session right under its parent, in the given
    order otherwise; a child whose parent is not in the list stands at the top level."""
    listed = {s.id for s in sessions}
    children: dict[str, list[Session]] = {}
    for session in sessions:
        if session.parent_id in listed:
            children.setdefault(session.parent_id, []).append(session)
    ordered: list[tuple[Session, int]] = []

    def add(session: Session, depth: int) -> None:
        ordered.append((session, depth))
        for child in children.get(session.id, []):
            add(child, depth + 1)

    for session in sessions:
        if session.parent_id not in listed:
            add(session, 0)
    return ordered
