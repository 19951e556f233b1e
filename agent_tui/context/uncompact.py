"""Taking back the newest compaction: the model sees again what it saw before it.

Nothing is deleted. The summary stays in the database and in `export`, marked reverted;
the session's boundary moves back to the compaction before it (or to the start); what
the compaction added (a "continue" message, a replayed question, shortened tail outputs)
is hidden or restored. Pruned outputs stay placeholders, as they were before.
"""

from __future__ import annotations

from pydantic import BaseModel

from agent_tui.budget.overflow import prompt_and_output, usable_tokens
from agent_tui.engine_context import EngineContext
from agent_tui.errors import UsageError
from agent_tui.events import CompactionUndone, MessageUpdated, SessionUpdated
from agent_tui.provider.limits import ModelInfo
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    Session,
    TextPart,
    ToolPart,
    ToolStateCompleted,
)
from agent_tui.scope import SessionScope, limits
from agent_tui.step.messages import (
    arrange_after_compaction,
    filter_compacted,
    last_finished_assistant,
    to_model_messages,
)
from agent_tui.step.request import estimate_tokens, history_tokens, session_scale


class Uncompacted(BaseModel):
    summary_id: str
    messages: int
    """Messages the model sees again."""
    estimated: int
    usable: int

    def message(self) -> str:
        return (
            f"Compaction undone: the model sees the {self.messages} messages before it again "
            f"(about {self.estimated:,} of {self.usable:,} usable tokens). The summary stays "
            "in the session, marked reverted."
        )


def finished_summaries(messages: list[MessageWithParts]) -> list[AssistantMessage]:
    """The summaries of finished compactions not undone, oldest first."""
    return [m.info for m in messages if isinstance(m.info, AssistantMessage) and m.info.in_force]


async def uncompact(scope: SessionScope, model: str | None = None) -> Uncompacted:
    """Take back the newest compaction if the history before it fits the usable window of
    `model` (else the session's model); UsageError, nothing changed, otherwise. The
    session is held meanwhile."""
    with scope.idle("undoing a compaction"):
        info = await limits(scope.workspace.config, model or await scope.model())
        ctx, session = scope.ctx, await scope.fresh()
        messages = await ctx.db.all_messages(session.id)
        summaries = finished_summaries(messages)
        current = next((s for s in summaries if s.parent_id == session.compaction_id), None)
        if current is None:
            raise UsageError("This session has no compaction to undo.")
        previous = next((s for s in reversed(summaries) if s.id < current.id), None)
        restored = session.model_copy(
            update={
                "compaction_id": previous.parent_id if previous else None,
                "tail_start_id": previous.tail_start_id if previous else None,
            }
        )
        current = current.model_copy(update={"reverted": True})
        hidden = _hide_followup(messages, current)
        history = _history_after(messages, restored, current, hidden)
        estimated, usable = _size(ctx, restored, history, info, before=current.parent_id)
        if usable and estimated > usable:
            raise UsageError(
                f"Undoing the newest compaction would need about {estimated:,} tokens, "
                f"{estimated - usable:,} more than the {usable:,} usable in {info.id}'s window. "
                "Nothing was changed."
            )
        await ctx.db.upsert_message(current, flush=True)
        for part in [*hidden, *_unshorten(messages, current)]:
            await ctx.db.upsert_part(part)
        await ctx.db.update_session(restored)
        await ctx.db.flush()
        ctx.publish(MessageUpdated(info=current))
        ctx.publish(SessionUpdated(session=restored))
        ctx.publish(CompactionUndone(session_id=session.id, summary_message_id=current.id))
        return Uncompacted(
            summary_id=current.id,
            messages=len(filter_compacted(history)),
            estimated=estimated,
            usable=usable,
        )


def _hide_followup(messages: list[MessageWithParts], summary: AssistantMessage) -> list[TextPart]:
    """The "continue" message or replayed question the compaction added, as ignored."""
    return [
        part.model_copy(update={"ignored": True})
        for message in messages
        if message.info.id == summary.followup_id
        for part in message.parts
        if isinstance(part, TextPart) and not part.ignored
    ]


def _unshorten(messages: list[MessageWithParts], summary: AssistantMessage) -> list[ToolPart]:
    """Tail outputs the compaction shortened get their full text back."""
    start = summary.tail_start_id or summary.parent_id
    tail = [m for m in messages if start <= m.info.id < summary.parent_id]
    return [
        part.model_copy(update={"state": part.state.model_copy(update={"shortened": None})})
        for message in tail
        for part in message.parts
        if isinstance(part, ToolPart)
        and isinstance(part.state, ToolStateCompleted)
        and part.state.shortened is not None
    ]


def _history_after(
    messages: list[MessageWithParts],
    session: Session,
    reverted: AssistantMessage,
    hidden: list[TextPart],
) -> list[MessageWithParts]:
    """The history the model would see with the boundary moved back (nothing saved)."""
    start = session.history_start or ""
    replaced = {p.id: p for p in hidden}
    view: list[MessageWithParts] = []
    for message in messages:
        if message.info.id < start:
            continue
        info = reverted if message.info.id == reverted.id else message.info
        parts = [replaced.get(p.id, p) for p in message.parts]
        view.append(MessageWithParts(info=info, parts=parts))
    return arrange_after_compaction(view, session)


def _size(
    ctx: EngineContext,
    session: Session,
    history: list[MessageWithParts],
    model: ModelInfo,
    *,
    before: str,
) -> tuple[int, int]:
    """(estimated prompt tokens as the provider counts them, usable): the larger of the
    local count (scaled to the provider's measure) and the provider's own figure for the
    last step before the compaction plus what came after it."""
    scale = session_scale(ctx, session, history, model.id)
    estimated = int(history_tokens(ctx, session, history, model.id) * scale)
    # The newest finished step before the compaction: its usage is the provider's measure
    # of the history that compaction replaced.
    last = last_finished_assistant([m for m in history if m.info.id < before])
    if last is not None:
        newer = [m for m in history if m.info.id > last.id]
        after = estimate_tokens(to_model_messages(newer), [], model.id) * scale
        estimated = max(estimated, prompt_and_output(last.tokens) + int(after))
    return estimated, usable_tokens(model.limit, ctx.config.compaction)
