"""A session's transcript in Claude Code's JSONL shape, the file a hook's
`transcript_path` points at: one line per user or assistant message (text, thinking,
`tool_use` under Claude Code's tool names) and one per tool result. It is brought up to
date from the session's stored messages each time a hook is about to read it, so it is
current at every event; the database stays the record. Like Claude Code's, it is a log:
what was written stays, and only the newest message (which may still be growing) is
written again, so an event costs the messages since the last one, not the session's
length (a cursor file beside it says where the newest message starts)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from agent_tui import paths
from agent_tui.config.hook_config import claude_input, claude_name
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
)
from agent_tui.storage.db import Database

VERSION = "agent-tui"


class _Cursor(BaseModel):
    """Where the newest written message starts: it is written again next time."""

    message_id: str
    offset: int
    parent: str | None = None
    """The line before it (its `parentUuid`)."""


def transcript_path(session_id: str) -> Path:
    return paths.data_dir() / "transcripts" / f"{session_id}.jsonl"


async def write_transcript(db: Database, session_id: str, directory: Path) -> Path:
    path = transcript_path(session_id)
    cursor = await asyncio.to_thread(_cursor, path)
    since = cursor.message_id if cursor else None
    messages = await db.messages(session_id, since_id=since)
    # Serialising and writing, off the event loop (a long session's first event writes
    # the whole file).
    await asyncio.to_thread(_write, path, cursor, messages, session_id, directory)
    return path


def _write(
    path: Path,
    cursor: _Cursor | None,
    messages: list[MessageWithParts],
    session_id: str,
    directory: Path,
) -> None:
    offset, parent = (cursor.offset, cursor.parent) if cursor else (0, None)
    chunks: list[bytes] = []
    newest = cursor
    for message in messages:
        newest = _Cursor(message_id=message.info.id, offset=offset, parent=parent)
        for line in _lines(message, session_id, directory):
            line["parentUuid"] = parent
            parent = line["uuid"]
            chunk = (json.dumps(line, ensure_ascii=False) + "\n").encode()
            chunks.append(chunk)
            offset += len(chunk)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("r+b" if cursor else "wb") as handle:
        handle.seek(cursor.offset if cursor else 0)
        handle.truncate()
        handle.writelines(chunks)
    if newest is not None:
        _cursor_path(path).write_text(newest.model_dump_json(), encoding="utf-8")


def _cursor_path(path: Path) -> Path:
    return path.with_suffix(".cursor")


def _cursor(path: Path) -> _Cursor | None:
    """The cursor, if it and the file agree (else the file is written whole again)."""
    try:
        cursor = _Cursor.model_validate_json(_cursor_path(path).read_text(encoding="utf-8"))
        return cursor if path.stat().st_size >= cursor.offset else None
    except (OSError, ValueError, ValidationError):
        return None


def _lines(message: MessageWithParts, session_id: str, directory: Path) -> list[dict[str, Any]]:
    info = message.info
    common = {
        "isSidechain": False,
        "userType": "external",
        "cwd": str(directory),
        "sessionId": session_id,
        "version": VERSION,
        "timestamp": datetime.fromtimestamp(info.created / 1000, UTC).isoformat(),
    }
    if not isinstance(info, AssistantMessage):
        if not (text := message.typed_text()):
            return []
        body = {"role": "user", "content": text}
        return [{**common, "type": "user", "message": body, "uuid": info.id}]
    content = [block for part in message.parts if (block := _block(part)) is not None]
    lines = []
    if content:
        body = {"role": "assistant", "type": "message", "model": info.model, "content": content}
        lines.append({**common, "type": "assistant", "message": body, "uuid": info.id})
    for part in message.parts:
        if isinstance(part, ToolPart) and (result := _result(part)) is not None:
            body = {"role": "user", "content": [result]}
            lines.append({**common, "type": "user", "message": body, "uuid": part.id})
    return lines


def _block(part: object) -> dict[str, Any] | None:
    if isinstance(part, TextPart) and part.text and not part.synthetic:
        return {"type": "text", "text": part.text}
    if isinstance(part, ReasoningPart) and part.text:
        return {"type": "thinking", "thinking": part.text}
    if isinstance(part, ToolPart):
        name, given = claude_name(part.tool), claude_input(part.tool, part.state.input)
        return {"type": "tool_use", "id": part.call_id, "name": name, "input": given}
    return None


def _result(part: ToolPart) -> dict[str, Any] | None:
    state = part.state
    if isinstance(state, ToolStateCompleted):
        return {"type": "tool_result", "tool_use_id": part.call_id, "content": state.output}
    if isinstance(state, ToolStateError):
        error = {"type": "tool_result", "tool_use_id": part.call_id, "content": state.error}
        return {**error, "is_error": True}
    return None
