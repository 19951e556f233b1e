"""Summaries prepared in the background, so compaction need not stop the work.

When a step ends past the start context/prepare_lead.py measures (before anything is
measured, `compaction.prepare_at` of the automatic threshold), the span that a
compaction would summarise now is summarised by a background task (the same one
summariser call, reading the same cached prefix) while the agent keeps working. It is
saved as a `PreparedSummary`: the span by its length and newest message id, a
fingerprint of its content, and the text. When the window fills up, compaction applies
it at once if it still matches the start of the history (context/compaction.py): the
steps after its span stay verbatim. Anything else — an undo or uncompact, an edited
turn, another summariser model or agent, an age past `compaction.prepare_max_age` —
discards it, and compaction summarises as before. Nothing is written until a summary is
whole: a cancelled or crashed preparation leaves no trace but the cost the provider
reported, which it never reports for an unfinished call.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
from pathlib import Path

from agent_tui.budget.overflow import fits, prompt_and_output, tail_budget, threshold_tokens
from agent_tui.budget.tokens import count_tokens
from agent_tui.config.settings import CompactionConfig
from agent_tui.context import preparing
from agent_tui.context.boundary import install, new_summary
from agent_tui.context.carried import carry_into
from agent_tui.context.compaction_plan import (
    select_span,
    summariser,
    whole_span_request,
)
from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError
from agent_tui.events import MessageUpdated, PartUpdated
from agent_tui.ids import now_ms, part_id
from agent_tui.provider import remote
from agent_tui.provider.api import stream_model
from agent_tui.provider.limits import ModelInfo
from agent_tui.provider.stream_events import ModelRequest, SaveWhenLeft, summary_of
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    PreparedSummary,
    Session,
    TextPart,
    Tokens,
    ToolPart,
    ToolStateCompleted,
    UserMessage,
)
from agent_tui.step.after_summary import after_summary_blocks, restated_text
from agent_tui.step.history import load_history
from agent_tui.step.plan import latest_plan
from agent_tui.step.processor import StepOutcome
from agent_tui.step.request import history_tokens, session_scale
from agent_tui.tool.todo import render_todos
from agent_tui.usage import Prices, cost_of

log = logging.getLogger(__name__)


def fingerprint(messages: list[MessageWithParts]) -> str:
    """What the summariser read of these messages, hashed. Prune's marks and a shortened
    tail output are left out: the summary was written from the full outputs, which is
    more, never less, than the model sees after a prune."""
    digest = hashlib.sha256()
    for message in messages:
        digest.update(message.info.model_dump_json().encode())
        for part in message.parts:
            data = part.model_dump(mode="json")
            if isinstance(part, ToolPart) and isinstance(part.state, ToolStateCompleted):
                data["state"].pop("shortened", None)
                data["state"].get("time", {}).pop("compacted", None)
            digest.update(json.dumps(data, sort_keys=True).encode())
    return digest.hexdigest()


def start(ctx: EngineContext, step: AssistantMessage, model: ModelInfo, agent: str) -> bool:
    """Start preparing in the background, from the history up to `step` (the step just
    finished: the next one, already under way, is not the summariser's), unless one runs
    for the session already (at most one per session). Returns whether one started."""
    session_id = step.session_id
    live = ctx.live(session_id)
    if live.is_preparing or preparing.elsewhere(ctx, session_id):
        return False
    task = asyncio.create_task(_prepare_logged(ctx, session_id, model, agent, step))
    live.preparing = task

    def forget(done: asyncio.Task[None]) -> None:
        if live.preparing is done:
            live.preparing = None

    task.add_done_callback(forget)
    return True


def cancel(ctx: EngineContext, session_id: str | None = None) -> None:
    """Stop the preparation of one session (Esc): it is discarded."""
    for live in ctx.shared.sessions:
        if live.preparing is not None and session_id in (None, live.id):
            live.preparing.cancel()


def hand_over(ctx: EngineContext) -> None:
    """Closing: a summary still being written goes on in the relay, which saves it
    for the next command (provider/detached.py); without one it is lost, and the next
    command past the preparation's start prepares it again before its first step."""
    running = [live.id for live in ctx.shared.sessions if live.preparing is not None]
    if running and not remote.leave():
        log.info("closing: the summaries being prepared for %s are dropped", running)


async def _prepare_logged(
    ctx: EngineContext, session_id: str, model: ModelInfo, agent: str, upto: AssistantMessage
) -> None:
    lock = preparing.locks(ctx).try_acquire(session_id)
    if lock is None:
        return  # another process prepares it
    try:
        await prepare(ctx, session_id, model, agent, upto=upto)
    except Exception:  # a failed preparation is only a compaction that will wait
        log.warning("preparing a summary for %s failed", session_id, exc_info=True)
    finally:
        lock.release()


def _pending_request(history: list[MessageWithParts]) -> bool:
    answered = {m.info.parent_id for m in history if isinstance(m.info, AssistantMessage)}
    return any(
        isinstance(p, CompactionPart)
        for m in history
        if isinstance(m.info, UserMessage) and m.info.id not in answered
        for p in m.parts
    )


def _tail_kept(history: list[MessageWithParts], model: ModelInfo, config: CompactionConfig) -> int:
    """Tail tokens to keep: only as much as the steps until the threshold will not add."""
    last = max(
        (m.info for m in history if isinstance(m.info, AssistantMessage) and m.info.finish),
        key=lambda info: info.id,
        default=None,
    )
    threshold = threshold_tokens(model.limit, config)
    room = max(0, threshold - prompt_and_output(last.tokens)) if last else threshold
    return max(0, tail_budget(model.limit, config) - room)


async def prepare(
    ctx: EngineContext,
    session_id: str,
    model: ModelInfo,
    agent: str,
    *,
    review: bool = False,
    instructions: str | None = None,
    upto: AssistantMessage | None = None,
) -> PreparedSummary | None:
    """Summarise, now, the span a compaction would summarise at the threshold, keeping
    only as much tail as the steps until the threshold will not add. `review`: the span
    a manual /compact summarises (the usual tail), for the person to apply or discard."""
    config = ctx.config.compaction
    session = await ctx.db.get_session(session_id)
    ctx.agent_catalog(Path(session.directory))  # the loop's tools: the very same request
    history = await load_history(ctx, session)
    if upto is not None:  # nothing newer than the step that asked for it
        history = [m for m in history if m.info.id <= upto.id]
    if not review and (
        _pending_request(history)  # a compaction is about to run anyway
        or await valid_ready(ctx, session, history, model, agent) is not None  # still matches
    ):
        return None
    keep = None if review else _tail_kept(history, model, config)  # None: the usual tail
    span = select_span(ctx, session, history, model, tail_tokens=keep)
    if not span.new_content:
        if review:
            raise CompactionError("Nothing to compact yet: the session has no new messages.")
        return None
    writer = summariser(ctx, model)
    rendered = render_todos(todos) if (todos := await ctx.db.get_todos(session.id)) else ""
    plan = latest_plan(history)
    request, size = whole_span_request(ctx, session, span, writer, instructions, rendered, plan)
    if not fits(size, writer.limit, config):
        return None  # a span for chunks: compaction summarises it as before
    started = time.monotonic()
    prepared = PreparedSummary(
        id=part_id(),
        session_id=session.id,
        boundary=session.compaction_id,
        last_id=span.summarised[-1].info.id,
        messages=len(span.summarised),
        fingerprint=fingerprint(span.summarised),
        model=writer.id,
        agent=agent,
        text="",  # streamed next
        restated=span.restated,
        review=review,
        asked_at=prompt_and_output(upto.tokens) if upto is not None else 0,
    )
    written = await _summarise(ctx, request, prepared, writer.prices)
    if written is None:
        return None
    prepared.text, prepared.tokens = written
    prepared.cost, prepared.created = cost_of(prepared.tokens, writer.prices), now_ms()
    prepared.seconds = round(time.monotonic() - started, 2)
    await ctx.db.save_prepared(prepared)
    log.info("prepared a summary of %d messages for %s", prepared.messages, session.id)
    return prepared


async def _summarise(
    ctx: EngineContext, request: ModelRequest, prepared: PreparedSummary, prices: Prices
) -> tuple[str, Tokens] | None:
    """The summariser's text and usage; None when it answered with no text (a tool call
    instead: compaction will ask again with tools off, as it does today). Detachable: on
    the relay it goes on when this command ends, and the relay saves `prepared`
    with its text for the next (provider/detached.py)."""
    leave = SaveWhenLeft(
        database=str(ctx.db.path),
        prepared=prepared.model_dump(mode="json", exclude={"text"}),
        prices=prices,
    )
    request = request.model_copy(update={"detachable": True, "save_when_left": leave})
    return summary_of([event async for event in stream_model(request)])


async def discard(ctx: EngineContext, prepared: PreparedSummary, reason: str) -> None:
    prepared.status = "discarded"
    prepared.reason = reason
    await ctx.db.save_prepared(prepared)
    log.info("discarded prepared summary %s: %s", prepared.id, reason)


def _stale_reason(
    ctx: EngineContext,
    prepared: PreparedSummary,
    session: Session,
    history: list[MessageWithParts],
    model: ModelInfo,
    agent: str,
) -> str | None:
    """Why `prepared` no longer matches the start of `history`, or None."""
    age = (now_ms() - prepared.created) / 1000
    if prepared.session_id != session.id:
        return "another session"
    if prepared.boundary != session.compaction_id:
        return "the history was compacted or uncompacted since"
    max_age = ctx.config.compaction.prepare_max_age
    if age > max_age and not prepared.review:  # a reviewed one waited for the person
        return f"{age:.0f} s old (compaction.prepare_max_age is {max_age:.0f})"
    writer = summariser(ctx, model).id
    if prepared.model != writer:
        return f"written by {prepared.model}; the summary model is now {writer}"
    if prepared.agent and agent and prepared.agent != agent:
        return f"prepared for agent {prepared.agent}, the turn is {agent}'s"
    span = history[: prepared.messages]
    cut = len(span) < prepared.messages or span[-1].info.id != prepared.last_id
    if cut or fingerprint(span) != prepared.fingerprint:
        return "what it covers was undone or changed"
    return None


async def valid_ready(
    ctx: EngineContext,
    session: Session,
    history: list[MessageWithParts],
    model: ModelInfo,
    agent: str,
) -> PreparedSummary | None:
    """The newest ready summary that still matches the start of `history`; older or
    stale ones are discarded (with the reason) on the way."""
    ready = await ctx.db.prepared_summaries(session.id, "ready")
    found: PreparedSummary | None = None
    for prepared in reversed(ready):
        if found is not None:
            await discard(ctx, prepared, "a newer one was prepared")
            continue
        reason = _stale_reason(ctx, prepared, session, history, model, agent)
        if reason is None:
            found = prepared
        else:
            await discard(ctx, prepared, reason)
    return found


def size_after(
    ctx: EngineContext,
    session: Session,
    prior: list[MessageWithParts],
    prepared: PreparedSummary,
    model: ModelInfo,
    carried: int = 0,
) -> tuple[int, int]:
    """(the prompt once `prepared` is applied, the most it may be), as the provider counts:
    the system prompt and tools, the summary, the restated words, `carried` (local tokens
    of the pins and file ledger restated after it) and every step after its span verbatim.
    The most is `prepare_at` of the threshold: past it the next compaction would follow at once,
    so the steps after the span are summarised too (the work waits)."""
    config = ctx.config.compaction
    local = history_tokens(ctx, session, prior[prepared.messages :], model.id)
    local += count_tokens(prepared.text, model.id)
    if prepared.restated:
        local += count_tokens(restated_text(prepared.restated), model.id)
    local += carried
    scale = session_scale(ctx, session, prior, model.id)
    threshold = threshold_tokens(model.limit, config)
    return int(local * scale), int((config.prepare_at or 1.0) * threshold)


async def apply(
    ctx: EngineContext,
    session: Session,
    prior: list[MessageWithParts],
    request_msg: MessageWithParts,
    part: CompactionPart,
    model: ModelInfo,
    abort: asyncio.Event,
) -> StepOutcome | None:
    """Apply a summary prepared in the background if one still matches the start of the
    history and what came after it fits: no summariser call, the work goes on at once.
    A preparation still running is waited for (only its remainder). None: summarise as
    before."""
    task = ctx.live(session.id).preparing
    if task is not None and not task.done():
        waiter = asyncio.ensure_future(abort.wait())
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        waiter.cancel()
        if abort.is_set():
            return "aborted"
    elif not await preparing.wait_elsewhere(ctx, session.id, abort):
        return "aborted"  # another process's (an earlier command's) preparation
    assert isinstance(request_msg.info, UserMessage)
    found = await valid_ready(ctx, session, prior, model, request_msg.info.agent)
    if found is None or (part.up_to is not None and found.last_id != part.up_to):
        return None  # compact up to here: only a summary of exactly that span
    summary = await new_summary(
        ctx,
        session,
        request_msg.info.id,
        found.model,
        found.restated,
        prior,
        finish="stop",
        completed=now_ms(),
        tokens=found.tokens,
        cost=found.cost,
    )
    # Pins as they are now and the ledger of the prepared span (context/carried.py).
    await carry_into(ctx, session, summary, prior[: found.messages], model)
    carried = count_tokens("\n\n".join(after_summary_blocks(summary)), model.id)
    size, most = size_after(ctx, session, prior, found, model, carried)
    if size > most:
        await discard(
            ctx, found, f"the steps after it do not fit: about {size:,} tokens, over {most:,}"
        )
        return None
    if found.edited is not None:  # corrected in the review: as an edit of the summary
        summary.edited_summary, summary.edited_at = found.edited, now_ms()
    text = TextPart(id=part_id(), session_id=session.id, message_id=summary.id, text=found.text)
    await ctx.db.upsert_message(summary)
    await ctx.db.upsert_part(text, flush=True)
    ctx.publish(MessageUpdated(info=summary))
    ctx.publish(PartUpdated(part=text))
    found.status, found.used_by = "used", request_msg.info.id
    await ctx.db.save_prepared(found)
    await install(ctx, session, request_msg, part, model, summary, prior[found.messages :], None)
    return "stop"
