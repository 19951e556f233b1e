"""Reading a session's history: the messages from the stored compaction boundary on."""

from __future__ import annotations

from agent_tui.engine_context import EngineContext
from agent_tui.records import MessageWithParts, Session, UserMessage
from agent_tui.step.messages import arrange_after_compaction


async def load_history(ctx: EngineContext, session: Session) -> list[MessageWithParts]:
    """Messages from the stored boundary on (undone turns left out), never a scan of
    everything before it."""
    messages = await ctx.db.messages(session.id, since_id=session.history_start)
    # Turns taken back with /undo stay in the database but are no longer the history.
    messages = [m for m in messages if not m.info.undone]
    return arrange_after_compaction(messages, session)


def model_of(history: list[MessageWithParts], default: str) -> str:
    """The model of the newest user message in the history, else `default`."""
    users = [m.info for m in history if isinstance(m.info, UserMessage) and m.info.model]
    return max(users, key=lambda u: u.id).model if users else default
