"""A summary becomes the new start of the history: the boundary moves, the new history
is checked to fit, the views are told, and what follows the summary is added. Shared by a
compaction that summarises now and one that applies a summary prepared ahead."""

from __future__ import annotations

from typing import Any

from agent_tui.budget.overflow import fits, threshold_tokens, usable_tokens
from agent_tui.context import compaction_hooks
from agent_tui.context.carried import announce_left_out
from agent_tui.context.tail import shorten_step
from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError
from agent_tui.events import SessionCompacted, SessionUpdated
from agent_tui.ids import message_id, part_id
from agent_tui.provider.limits import ModelInfo
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    Session,
    TextPart,
    UserMessage,
)
from agent_tui.step.history import load_history
from agent_tui.step.messages import CONTINUE_TEXT
from agent_tui.step.plan import latest_plan
from agent_tui.step.request import history_tokens
from agent_tui.tool.todo import render_todos

NO_PROGRESS_MESSAGE = (
    "Compaction could not make the conversation fit the model's context window. "
    "Nothing was lost: start a new session (/new, or `agent-tui run` without --continue), "
    "or choose a model with a larger window."
)


async def install(
    ctx: EngineContext,
    session: Session,
    request_msg: MessageWithParts,
    part: CompactionPart,
    model: ModelInfo,
    summary: AssistantMessage,
    tail: list[MessageWithParts],
    replay: MessageWithParts | None,
    shorten: int | None = None,
) -> None:
    """The summary becomes the start of the history: move the boundary, check the new
    history fits, announce it, add what follows it (the replayed question or
    "continue"), then run the person's PostCompact hooks."""
    config = ctx.config
    session.compaction_id = request_msg.info.id
    session.tail_start_id = tail[0].info.id if tail else None
    if shorten is not None:
        await shorten_step(ctx, tail[-1], shorten, model.id)
    summary.context_estimate = await check_converged(ctx, session, model)
    summary.tail_start_id = session.tail_start_id  # where the history restarts, for uncompact
    summary.context_limit = model.limit.context  # context % is of the session's model
    summary.context_usable = usable_tokens(model.limit, config.compaction)
    summary.context_threshold = threshold_tokens(model.limit, config.compaction)
    await ctx.db.upsert_message(summary, flush=True)
    await ctx.db.update_session(session)
    ctx.publish(SessionUpdated(session=session))
    ctx.publish(
        SessionCompacted(session_id=session.id, auto=part.auto, summary_message_id=summary.id)
    )
    announce_left_out(ctx, session.id, summary)  # pins over compaction.pin_tokens
    followup = None
    if replay is not None:
        followup = await add_user_text(
            ctx, session.id, request_msg, text_of(replay), synthetic=False
        )
    elif part.auto:
        followup = await add_user_text(ctx, session.id, request_msg, CONTINUE_TEXT, synthetic=True)
    if followup is not None:
        summary.followup_id = followup.info.id
        await ctx.db.upsert_message(summary, flush=True)
    await compaction_hooks.after(ctx, session, part)


async def check_converged(ctx: EngineContext, session: Session, model: ModelInfo) -> int:
    """The new history must fit; drop the kept tail if needed, else stop clearly.
    Returns the estimated size of the new history."""
    for _ in range(2):
        size = history_tokens(ctx, session, await load_history(ctx, session), model.id)
        if fits(size, model.limit, ctx.config.compaction):
            return size
        if session.tail_start_id is None:
            break
        session.tail_start_id = None
    usable = usable_tokens(model.limit, ctx.config.compaction)
    raise CompactionError(
        f"After compaction the conversation still needs about {size:,} tokens, more than the "
        f"{usable:,} usable in {model.id}'s window. " + NO_PROGRESS_MESSAGE
    )


def text_of(message: MessageWithParts) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart) and not p.synthetic)


async def add_user_text(
    ctx: EngineContext, session_id: str, like: MessageWithParts, text: str, *, synthetic: bool
) -> MessageWithParts:
    assert isinstance(like.info, UserMessage)
    info = UserMessage(
        id=message_id(), session_id=session_id, model=like.info.model, agent=like.info.agent
    )
    part = TextPart(
        id=part_id(), session_id=session_id, message_id=info.id, text=text, synthetic=synthetic
    )
    return await ctx.add_message(info, part)


async def new_summary(
    ctx: EngineContext,
    session: Session,
    request_id: str,
    model: str,
    restated: list[str],
    prior: list[MessageWithParts],
    **done: Any,
) -> AssistantMessage:
    """A summary message answering compaction request `request_id`, before its text:
    what is restated after it (the person's words, the todo list, the newest plan in
    `prior`) is fixed now. `done`: the fields of one already written (a prepared one)."""
    todos = await ctx.db.get_todos(session.id)
    return AssistantMessage(
        id=message_id(),
        session_id=session.id,
        parent_id=request_id,
        model=model,
        agent="compaction",
        summary=True,
        restated=restated,
        todos=render_todos(todos) if todos else "",
        plan=latest_plan(prior),
        **done,
    )
