"""How models map to table rows: the SQL for writing them and the parsers for reading."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from typing import Any

from pydantic import TypeAdapter

from agent_tui.records import Message, MessageWithParts, Part, Session

MESSAGE_ADAPTER: TypeAdapter[Message] = TypeAdapter(Message)
PART_ADAPTER: TypeAdapter[Part] = TypeAdapter(Part)

# Session fields kept in their own columns (indexed or read without JSON); any other
# field lives in the `data` JSON column so that new fields need no migration.
SESSION_COLUMNS = (
    "id",
    "title",
    "directory",
    "parent_id",
    "created",
    "updated",
    "compaction_id",
    "tail_start_id",
)

INSERT_SESSION = (
    f"INSERT INTO session ({', '.join(SESSION_COLUMNS)}, data) "
    f"VALUES ({', '.join('?' * (len(SESSION_COLUMNS) + 1))})"
)
# `updated` never moves backwards: a flush may have bumped it after the caller read
# the session it is now saving. Numbered parameters: it takes INSERT_SESSION's values.
UPDATE_SESSION = (
    "UPDATE session SET title = ?2, directory = ?3, parent_id = ?4, created = ?5, "
    "updated = max(updated, ?6), compaction_id = ?7, tail_start_id = ?8, data = ?9 WHERE id = ?1"
)
BUMP_SESSION = "UPDATE session SET updated = max(updated, ?) WHERE id = ?"
SELECT_SESSION = f"SELECT {', '.join(SESSION_COLUMNS)}, data FROM session"

UPSERT_MESSAGE = (
    "INSERT INTO message (id, session_id, role, info) VALUES (?, ?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET session_id = excluded.session_id, "
    "role = excluded.role, info = excluded.info"
)
UPSERT_PART = (
    "INSERT INTO part (id, message_id, session_id, type, data) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT(id) DO UPDATE SET message_id = excluded.message_id, "
    "session_id = excluded.session_id, type = excluded.type, data = excluded.data"
)

# History reads: range scans of message(session_id, id) and part(session_id, message_id,
# id), so nothing before the compaction boundary is read.
HISTORY_MESSAGES = "SELECT info FROM message WHERE session_id = ? AND id >= ? ORDER BY id"
NEWEST_MESSAGE_IDS = "SELECT id FROM message WHERE session_id = ? ORDER BY id DESC LIMIT ?"
HISTORY_PARTS = (
    "SELECT message_id, data FROM part WHERE session_id = ? AND message_id >= ? "
    "ORDER BY message_id, id"
)

MessageRow = tuple[str, str, str, str]
PartRow = tuple[str, str, str, str, str]


def session_row(session: Session) -> tuple[Any, ...]:
    """Values for INSERT_SESSION and UPDATE_SESSION (SESSION_COLUMNS' order, then data)."""
    extra = session.model_dump(mode="json", exclude=set(SESSION_COLUMNS))
    return (*(getattr(session, c) for c in SESSION_COLUMNS), json.dumps(extra))


def parse_session(row: sqlite3.Row) -> Session:
    data = json.loads(row["data"] or "{}")
    data.update({column: row[column] for column in SESSION_COLUMNS})
    return Session.model_validate(data)


def message_row(info: Message) -> MessageRow:
    return (info.id, info.session_id, info.role, info.model_dump_json())


def part_row(part: Part) -> PartRow:
    return (part.id, part.message_id, part.session_id, part.type, part.model_dump_json())


def parse_message(info: str) -> Message:
    return MESSAGE_ADAPTER.validate_json(info)


def parse_part(data: str) -> Part:
    return PART_ADAPTER.validate_json(data)


def history(message_rows: Iterable[Any], part_rows: Iterable[Any]) -> list[MessageWithParts]:
    """The messages of HISTORY_MESSAGES' rows, each with its parts from HISTORY_PARTS'
    rows (a part whose message is not among them is left out)."""
    result = [MessageWithParts(info=parse_message(row[0])) for row in message_rows]
    by_id = {item.info.id: item for item in result}
    for message_id, data in part_rows:
        holder = by_id.get(message_id)
        if holder is not None:
            holder.parts.append(parse_part(data))
    return result
