"""Full-text search over a session's stored text, for the recall tool.

An SQLite FTS5 table holds one row per finished part (user and assistant text, reasoning,
tool input and the original output, pruned or not), keyed by the part's rowid. Rows are
written in the same transaction as the part, so the index is current on every write;
databases from before the index are indexed by a background backfill after opening.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from typing import Any

from pydantic import BaseModel

from agent_tui import ids
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    Part,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
)
from agent_tui.storage import rows
from agent_tui.storage.db_core import DatabaseCore

log = logging.getLogger(__name__)

FTS_MIGRATION: tuple[str, ...] = (
    "CREATE VIRTUAL TABLE part_fts USING fts5("
    "body, session_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TABLE search_state (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    # Parts stored before the index existed are indexed from this rowid on.
    "INSERT INTO search_state (key, value) VALUES ('backfill', '0')",
)
INDEX_PART = (
    "INSERT OR REPLACE INTO part_fts (rowid, body, session_id) "
    "SELECT rowid, ?, ? FROM part WHERE id = ?"
)
BACKFILL_BATCH = 500
RECALL_TOOL = "recall"
EXCERPT_TOKENS = 24
RANK_WINDOW = 2_000
"""Matches ranked by relevance: the newest this many (older ones need rarer words)."""
_TERM = re.compile(r'"([^"]+)"|(\S+)')


class SearchHit(BaseModel):
    """One match: where it is, what it is, and a short excerpt around it."""

    part_id: str
    message_id: str
    role: str
    kind: str
    """text, reasoning or tool."""
    tool: str | None = None
    created: int = 0
    excerpt: str
    compacted: bool = False
    """Before the compaction boundary: the model sees only the summary of it."""
    pruned: bool = False
    """A tool output cleared from the model's view ("[Old tool result content cleared]")."""


def searchable_text(part: Part) -> str | None:
    """The text a finished part is found by; None while it is still streaming or running."""
    if isinstance(part, TextPart):
        if part.ignored or (part.start is not None and part.end is None):
            return None
        return part.text or None
    if isinstance(part, ReasoningPart):
        return part.text if part.end is not None and part.text else None
    if isinstance(part, ToolPart):
        if part.tool == RECALL_TOOL:
            return None  # its results are copies of other parts: finding them is noise
        state = part.state
        if isinstance(state, ToolStateCompleted):
            result = state.output
        elif isinstance(state, ToolStateError):
            result = state.error
        else:
            return None
        return f"{part.tool} {json.dumps(state.input, ensure_ascii=False)}\n{result}"
    return None


def fts_query(query: str, *, any_term: bool = False) -> str | None:
    """Words and "quoted phrases" as an FTS5 query: every term must match (or any one,
    with `any_term`). Terms are quoted, so FTS5 syntax in them is taken literally."""
    terms = [phrase or word for phrase, word in _TERM.findall(query)]
    quoted = ['"' + term.replace('"', '""') + '"' for term in terms if term.strip()]
    return (" OR " if any_term else " ").join(quoted) or None


class SearchQueries(DatabaseCore):
    """Search methods of Database."""

    async def search_parts(self, session_id: str, query: str, limit: int = 8) -> list[SearchHit]:
        """The best matches for `query` in the session: all words first, else any word."""
        await self.flush()
        boundary = await self._history_start(session_id)
        for any_term in (False, True):
            match = fts_query(query, any_term=any_term)
            if match is None:
                return []
            # Rank first, on the index alone: the excerpts and the joins are made for the
            # few rows returned, not for every match of a common word.
            # bm25 over every match of a common word is slow on a large session; rank
            # only the newest RANK_WINDOW matches (walking rowids backwards is cheap).
            edge = await self._fetch(
                "SELECT rowid FROM part_fts WHERE part_fts MATCH ? "
                "ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (match, RANK_WINDOW - 1),
            )
            ranked = await self._rank(match, session_id, limit, edge[0][0] if edge else 0)
            if not ranked and edge:  # the newest matches were another session's
                ranked = await self._rank(match, session_id, limit, 0)
            if not ranked:
                continue
            rowids = [row[0] for row in ranked]
            marks = ", ".join("?" * len(rowids))
            rows = await self._fetch(
                "SELECT part_fts.rowid, part.id, part.message_id, part.data, message.role, "
                f"message.info, snippet(part_fts, 0, '', '', '…', {EXCERPT_TOKENS}) "
                "FROM part_fts JOIN part ON part.rowid = part_fts.rowid "
                "JOIN message ON message.id = part.message_id "
                f"WHERE part_fts MATCH ? AND part_fts.rowid IN ({marks})",
                (match, *rowids),
            )
            by_rowid = {row[0]: row[1:] for row in rows}
            return [_hit(by_rowid[r], boundary) for r in rowids if r in by_rowid]
        return []

    async def _rank(self, match: str, session_id: str, limit: int, low: int) -> list[Any]:
        return await self._fetch(
            "SELECT rowid FROM part_fts WHERE part_fts MATCH ? AND rowid >= ? "
            "AND session_id = ? ORDER BY rank LIMIT ?",
            (match, low, session_id, limit),
        )

    async def find_original(self, session_id: str, item_id: str) -> MessageWithParts | None:
        """A message with all its parts, or a message holding just the one part asked
        for, as stored (pruned outputs in full); None if not in this session."""
        await self.flush()
        item_id = await self._own_id(session_id, item_id)
        found = await self._fetch(
            "SELECT message_id FROM part WHERE id = ? AND session_id = ?", (item_id, session_id)
        )
        message_id = found[0][0] if found else item_id
        info = await self._fetch(
            "SELECT info FROM message WHERE id = ? AND session_id = ?", (message_id, session_id)
        )
        if not info:
            return None
        parts = await self._fetch(
            "SELECT data FROM part WHERE message_id = ? AND (? = '' OR id = ?) ORDER BY id",
            (message_id, item_id if found else "", item_id),
        )
        return MessageWithParts(
            info=rows.parse_message(info[0][0]), parts=[rows.parse_part(r[0]) for r in parts]
        )

    async def _own_id(self, session_id: str, item_id: str) -> str:
        """`item_id`, or this session's id with the same time-ordered stem: a fork's copy
        of what the model read in the original (session/fork.py)."""
        if len(item_id) <= ids.STEM:
            return item_id
        stem = item_id[: ids.STEM]
        for table in ("part", "message"):
            found = await self._fetch(
                f"SELECT id FROM {table} WHERE session_id = ? AND id BETWEEN ? AND ? "
                "ORDER BY id = ? DESC LIMIT 1",
                (session_id, stem, stem + "~", item_id),
            )
            if found:
                return found[0][0]
        return item_id

    async def _history_start(self, session_id: str) -> str | None:
        found = await self._fetch(f"{rows.SELECT_SESSION} WHERE id = ?", (session_id,))
        return rows.parse_session(found[0]).history_start if found else None

    async def backfill_search_index(self) -> int:
        """Index parts stored before the index existed, a batch per transaction so the
        session stays responsive; returns how many parts were indexed."""
        indexed = 0
        while True:
            async with self._transaction() as conn:
                state = await conn.execute_fetchall(
                    "SELECT value FROM search_state WHERE key = 'backfill'"
                )
                if not state or state[0][0] == "done":
                    return indexed
                batch = await conn.execute_fetchall(
                    "SELECT rowid, session_id, data FROM part WHERE rowid > ? "
                    "ORDER BY rowid LIMIT ?",
                    (int(state[0][0]), BACKFILL_BATCH),
                )
                rows = [(r, text, sid) for r, sid, data in batch if (text := _text_of_row(data))]
                await conn.executemany(
                    "INSERT OR REPLACE INTO part_fts (rowid, body, session_id) VALUES (?, ?, ?)",
                    rows,
                )
                done = len(batch) < BACKFILL_BATCH
                mark = "done" if done else str(batch[-1][0])
                await conn.execute(
                    "UPDATE search_state SET value = ? WHERE key = 'backfill'", (mark,)
                )
            indexed += len(rows)
            if done:
                return indexed
            await asyncio.sleep(0)  # let the session's own work run between batches


def _text_of_row(data: str) -> str | None:
    try:
        return searchable_text(rows.parse_part(data))
    except ValueError:  # a row this version cannot read is simply not searchable
        return None


def _hit(row: Any, boundary: str | None) -> SearchHit:
    part_id, message_id, data, role, info, excerpt = row
    part = rows.parse_part(data)
    message = rows.parse_message(info)
    tool = part.tool if isinstance(part, ToolPart) else None
    pruned = isinstance(part, ToolPart) and bool(
        isinstance(part.state, ToolStateCompleted) and part.state.time.compacted
    )
    if isinstance(message, AssistantMessage) and message.summary:
        role = "summary"
    return SearchHit(
        part_id=part_id,
        message_id=message_id,
        role=role,
        kind=part.type,
        tool=tool,
        created=message.created,
        excerpt=" ".join(excerpt.split()),
        compacted=boundary is not None and message_id < boundary,
        pruned=pruned,
    )
