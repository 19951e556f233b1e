"""Fork: a new session whose history is another's up to one of its messages, with the
summary, pins, file ledger, todos and file snapshots as they were there; the original
is not touched.

Every copied message and part gets a new id with the same time-ordered stem (`ids.py`:
prefix, time and counter; only the random tail differs), so the copy sorts exactly as the
original, and an id the model read in the original (a recall result) names the copy's
(`storage/search.py` finds it by its stem). Only fields that hold an id are rewritten:
what the model reads is byte for byte the same, so the fork's first request reads the
shared prefix from the provider's cache.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from agent_tui.context.uncompact import finished_summaries
from agent_tui.errors import UsageError
from agent_tui.ids import copy_id
from agent_tui.ids import session_id as new_session_id
from agent_tui.records import (
    CompactionPart,
    MessageWithParts,
    Session,
    SessionExport,
    TodoItem,
    ToolPart,
    UserMessage,
)
from agent_tui.scope import SessionScope


def _rewrite(value: Any, ids: dict[str, str]) -> Any:
    """`value` (a model's dump) with every string that is one of `ids` replaced."""
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, dict):
        return {key: _rewrite(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_rewrite(item, ids) for item in value]
    return value


def _boundary(session: Session, kept: list[MessageWithParts], newest: bool) -> dict[str, Any]:
    """The compaction in force at the fork's last message."""
    if newest:
        return {"compaction_id": session.compaction_id, "tail_start_id": session.tail_start_id}
    if not (summaries := finished_summaries(kept)):
        return {"compaction_id": None, "tail_start_id": None}
    return {"compaction_id": summaries[-1].parent_id, "tail_start_id": summaries[-1].tail_start_id}


def _todos(kept: list[MessageWithParts]) -> list[TodoItem]:
    """The todo list as the newest todowrite in `kept` left it."""
    for message in reversed(kept):
        for part in reversed(message.parts):
            if isinstance(part, ToolPart) and part.tool == "todowrite":
                if (todos := getattr(part.state, "metadata", {}).get("todos")) is not None:
                    return [TodoItem.model_validate(item) for item in todos]
    return []


class Forked(BaseModel):
    """A fork, and the words of the person's message it was made before, if it was."""

    session: Session
    retype: str | None = None
    """Forked at one of the person's own messages: the fork ends before it, as Claude
    Code's and OpenCode's do, and its text is given back to be edited and sent again."""


def _typed(message: MessageWithParts) -> str | None:
    """The text of a message the person typed (not a compaction request), else None."""
    if not isinstance(message.info, UserMessage):
        return None
    if any(isinstance(part, CompactionPart) for part in message.parts):
        return None
    return message.typed_text() or None


async def fork(scope: SessionScope, message_id: str | None = None) -> Forked:
    """A new session of the session's history up to and including `message_id` (the
    whole history when None; before it when it is one the person typed: its text comes
    back as `retype`), its summary, pins, ledger, todos and snapshots as they were there."""
    ctx, session_id = scope.ctx, scope.id
    export = await ctx.db.export_session(session_id)
    messages = export.messages
    ends = [i for i, m in enumerate(messages) if m.info.id == message_id]
    if message_id is not None and not ends:
        raise UsageError(
            f"No message {message_id} in session {session_id}: fork from one of its messages "
            "(`agent-tui export` shows their ids), or give none to fork the whole session."
        )
    retype = _typed(messages[ends[0]]) if ends else None
    kept = messages[: ends[0] + (0 if retype is not None else 1)] if ends else messages
    if not kept and retype is None:
        raise UsageError(f"Session {session_id} has no messages to fork yet.")
    original = export.session
    fork_id = new_session_id()
    ids = {session_id: fork_id}
    for message in kept:
        ids[message.info.id] = copy_id(message.info.id)
        ids.update((part.id, copy_id(part.id)) for part in message.parts)
    session = original.model_copy(
        update={
            "id": fork_id,
            "title": f"{original.title or 'Session'} (fork)",
            "parent_id": None,
            **_boundary(original, kept, newest=bool(kept) and kept[-1] is messages[-1]),
        }
    )
    copied = SessionExport.model_validate(
        _rewrite(SessionExport(session=session, messages=kept).model_dump(mode="json"), ids)
    )
    copied.session.forked_from = session_id
    copied.session.forked_at = kept[-1].info.id if kept else None
    stored = await ctx.db.import_session(copied)
    await ctx.db.set_todos(fork_id, _todos(kept))
    return Forked(session=stored, retype=retype)
