"""Summaries prepared in the background: one row per summary in `prepared_summary`.

A table of its own: a prepared summary is not part of the conversation until a compaction
applies it (then a summary message carries its text), and it must never show up in the
history, the views or an undo.
"""

from __future__ import annotations

from agent_tui.records import PreparedStatus, PreparedSummary
from agent_tui.storage.db_core import DatabaseCore

PREPARED_MIGRATION: tuple[str, ...] = (
    """CREATE TABLE prepared_summary (
        id TEXT PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES session(id) ON DELETE CASCADE,
        status TEXT NOT NULL,
        data TEXT NOT NULL
    )""",
    "CREATE INDEX prepared_summary_session ON prepared_summary (session_id, status)",
)
_UPSERT = (
    "INSERT INTO prepared_summary (id, session_id, status, data) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET status = excluded.status, data = excluded.data"
)


class PreparedQueries(DatabaseCore):
    """Prepared-summary methods of Database."""

    async def save_prepared(self, prepared: PreparedSummary) -> None:
        async with self._transaction() as conn:
            await conn.execute(
                _UPSERT,
                (prepared.id, prepared.session_id, prepared.status, prepared.model_dump_json()),
            )

    async def prepared_summaries(
        self, session_id: str, status: PreparedStatus | None = None
    ) -> list[PreparedSummary]:
        """The session's prepared summaries, oldest first (only `status` when given)."""
        found = await self._fetch(
            "SELECT data FROM prepared_summary WHERE session_id = ? "
            "AND (? IS NULL OR status = ?) ORDER BY id",
            (session_id, status, status),
        )
        return [PreparedSummary.model_validate_json(row["data"]) for row in found]

    async def prepared_by(self, model: str, newest: int) -> list[PreparedSummary]:
        """The `newest` summaries model `model` prepared, in any session, newest first."""
        found = await self._fetch(
            "SELECT data FROM prepared_summary WHERE json_extract(data, '$.model') = ? "
            "ORDER BY id DESC LIMIT ?",
            (model, newest),
        )
        return [PreparedSummary.model_validate_json(row["data"]) for row in found]
