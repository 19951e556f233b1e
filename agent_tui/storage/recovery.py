"""Crash recovery: pure model repairs, and the Database methods that apply them."""

from __future__ import annotations

from typing import TypeGuard

from agent_tui.ids import now_ms
from agent_tui.records import (
    AssistantMessage,
    ErrorInfo,
    Message,
    Part,
    ToolPart,
    ToolStateError,
    ToolStateRunning,
    ToolTime,
)
from agent_tui.storage import rows
from agent_tui.storage.db_core import DatabaseCore

INTERRUPTED_TOOL_ERROR = "[Tool execution was interrupted]"
INTERRUPTED_KIND = "interrupted"
INTERRUPTED_MESSAGE = "The response was interrupted before it finished (agent-tui stopped)."

# Cheap text filters for SQL: model_dump_json writes no spaces, so an open tool part's
# data contains one of these. The parsed state is checked again in Python.
OPEN_TOOL_MARKERS = ('"status":"pending"', '"status":"running"')


def interrupt_tool(part: Part, now: int) -> ToolPart | None:
    """A pending/running tool part turned into an error result, or None if it is closed."""
    if not isinstance(part, ToolPart) or part.state.status not in ("pending", "running"):
        return None
    state = part.state
    start = state.time.start if isinstance(state, ToolStateRunning) else None
    metadata = state.metadata if isinstance(state, ToolStateRunning) else {}
    error = ToolStateError(
        input=state.input,
        error=INTERRUPTED_TOOL_ERROR,
        metadata=metadata,
        time=ToolTime(start=start, end=now),
    )
    return part.model_copy(update={"state": error})


def is_unfinished(info: Message) -> TypeGuard[AssistantMessage]:
    return isinstance(info, AssistantMessage) and info.completed is None and info.finish is None


def interrupt_message(info: Message, now: int) -> AssistantMessage | None:
    """An unfinished (non-summary) assistant message closed with an "interrupted" error.

    Unfinished summaries are left alone: `discard_unfinished_summaries` removes them so
    that their compaction request runs again.
    """
    if not is_unfinished(info) or info.summary:
        return None
    error = info.error or ErrorInfo(kind=INTERRUPTED_KIND, message=INTERRUPTED_MESSAGE)
    return info.model_copy(update={"error": error, "completed": now})


class RecoveryQueries(DatabaseCore):
    """Crash recovery methods of Database; the session loop calls them on resume."""

    async def interrupted_parts_cleanup(self, session_id: str | None = None) -> int:
        """Close what a crash left open (in one session, or everywhere if None).

        Pending/running tool parts become errors "[Tool execution was interrupted]";
        unfinished assistant messages get completed with error kind "interrupted".
        Unfinished summaries are left for `discard_unfinished_summaries`. Returns the
        number of parts and messages changed. Call it when resuming a session, never
        while that session's loop is running.
        """
        await self.flush()
        now = now_ms()
        scope, params = (" AND session_id = ?", (session_id,)) if session_id else ("", ())
        async with self._transaction() as conn:
            tool_rows = await conn.execute_fetchall(
                "SELECT data FROM part WHERE type = 'tool' "
                f"AND (instr(data, ?) > 0 OR instr(data, ?) > 0){scope}",
                (*OPEN_TOOL_MARKERS, *params),
            )
            message_rows = await conn.execute_fetchall(
                "SELECT info FROM message WHERE role = 'assistant' "
                "AND json_extract(info, '$.completed') IS NULL "
                f"AND json_extract(info, '$.finish') IS NULL{scope}",
                params,
            )
            parts = [p for r in tool_rows if (p := interrupt_tool(rows.parse_part(r[0]), now))]
            infos = [
                i for r in message_rows if (i := interrupt_message(rows.parse_message(r[0]), now))
            ]
            await conn.executemany(rows.UPSERT_MESSAGE, [rows.message_row(i) for i in infos])
            await conn.executemany(rows.UPSERT_PART, [rows.part_row(p) for p in parts])
        for info in infos:
            self._history.on_message(info)
        for part in parts:
            self._history.on_part(part)
        return len(parts) + len(infos)

    async def discard_unfinished_summaries(self, session_id: str) -> int:
        """Delete summary messages (and parts) a crash cut short; returns how many.

        Their compaction request stays pending, so the loop runs it again.
        """
        await self.flush()
        async with self._transaction() as conn:
            found = await conn.execute_fetchall(
                "SELECT info FROM message WHERE session_id = ? AND role = 'assistant' "
                "AND json_extract(info, '$.summary') = 1 "
                "AND json_extract(info, '$.completed') IS NULL "
                "AND json_extract(info, '$.finish') IS NULL",
                (session_id,),
            )
            infos = [rows.parse_message(row[0]) for row in found]
            doomed = [info.id for info in infos if is_unfinished(info) and info.summary]
            await conn.executemany("DELETE FROM message WHERE id = ?", [(i,) for i in doomed])
        self._forget(doomed)
        return len(doomed)
