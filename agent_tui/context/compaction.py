"""Summary compaction: an LLM-written summary becomes the new start of the history."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent_tui.aborting import unless_aborted
from agent_tui.budget.overflow import fits
from agent_tui.context import compaction_hooks, prepared
from agent_tui.context.boundary import install, new_summary
from agent_tui.context.carried import carry_into
from agent_tui.context.compaction_plan import (
    SUMMARY_REQUEST,
    Span,
    chunk_plan,
    select_span,
    summariser,
    whole_span_request,
)
from agent_tui.engine_context import EngineContext
from agent_tui.errors import CompactionError
from agent_tui.events import MessageUpdated
from agent_tui.ids import message_id, now_ms, part_id
from agent_tui.project.agents import DEFAULT_AGENT
from agent_tui.provider.api import complete_text
from agent_tui.provider.auth import credentials
from agent_tui.provider.limits import ModelInfo
from agent_tui.provider.stream_events import ModelRequest
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    ErrorInfo,
    MessageWithParts,
    Session,
    UserMessage,
)
from agent_tui.step.after_summary import todos_block
from agent_tui.step.plan import plan_block
from agent_tui.step.processor import StepOutcome, StepProcessor

AUTO_OFF_ADVICE = (
    "Nothing was compacted: automatic compaction is off (compaction.auto: false). Your "
    "message is saved: run /compact (headless: `agent-tui compact --continue`) and then "
    "continue, or set compaction.auto to true."
)
OVERFLOW_ADVICE = (
    "It still did not fit after compacting. Start a new session (/new, or `agent-tui run` "
    "without --continue), ask for less output at once, or choose a model with a larger window."
)
_ASKED_AGAIN = {"session_id", "parent_id", "model", "agent", "summary", "restated", "todos", "plan"}
"""What a summary asked again with tools off keeps of the one that called a tool."""


async def create_request(
    ctx: EngineContext,
    session_id: str,
    *,
    auto: bool,
    model: str,
    overflow: bool = False,
    instructions: str | None = None,
    agent: str = DEFAULT_AGENT,
    up_to: str | None = None,
) -> MessageWithParts:
    """A user message holding a compaction part; the loop processes it first. `agent`
    is the turn's: the message that continues after the summary goes to it too."""
    info = UserMessage(id=message_id(), session_id=session_id, model=model, agent=agent)
    part = CompactionPart(
        id=part_id(),
        session_id=session_id,
        message_id=info.id,
        auto=auto,
        overflow=overflow,
        instructions=instructions or None,
        up_to=up_to,
    )
    return await ctx.add_message(info, part)


def _summary_messages(
    system: str,
    chunk: list[dict[str, Any]],
    earlier: str | None,
    instructions: str | None,
    todos: str = "",
    plan: str = "",
) -> list[dict[str, Any]]:
    """One chunk of a span too large for one request, as a plain transcript."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if earlier:
        messages.append({"role": "user", "content": f"Earlier summary of this session:\n{earlier}"})
    messages.extend(chunk)
    final = SUMMARY_REQUEST
    if todos:
        final += "\n\n" + todos_block(todos)
    if plan:
        final += "\n\n" + plan_block(plan)
    if instructions:
        final += f"\n\nAdditional instructions from the person:\n{instructions}"
    if messages[-1]["role"] == "user":
        messages[-1] = {"role": "user", "content": messages[-1]["content"] + "\n\n" + final}
    else:
        messages.append({"role": "user", "content": final})
    return messages


async def process(
    ctx: EngineContext,
    session: Session,
    history: list[MessageWithParts],
    request_msg: MessageWithParts,
    part: CompactionPart,
    model: ModelInfo,
    abort: asyncio.Event,
) -> StepOutcome:
    """Summarise what precedes `request_msg` but the verbatim tail; on success move the
    session's boundary. Afterwards the model sees: the summary, the person's own words
    from the summarised span, the newest steps verbatim, then what came after. The
    person's PreCompact hooks run first; PostCompact ones when the boundary has moved
    (`boundary.install`)."""
    await compaction_hooks.before(ctx, session, part)
    index = next(i for i, m in enumerate(history) if m.info.id == request_msg.info.id)
    prior = history[:index]
    if not part.overflow and not part.instructions:
        outcome = await prepared.apply(ctx, session, prior, request_msg, part, model, abort)
        if outcome is not None:
            return outcome
    span = select_span(ctx, session, prior, model, overflow=part.overflow, up_to=part.up_to)
    if not span.new_content and span.replay is None:
        raise CompactionError("Nothing to compact yet: the session has no new messages.")
    summary_model = summariser(ctx, model)
    summary = await new_summary(
        ctx, session, request_msg.info.id, summary_model.id, span.restated, prior
    )
    request, size = whole_span_request(
        ctx, session, span, summary_model, part.instructions, summary.todos, summary.plan
    )
    if not fits(size, summary_model.limit, ctx.config.compaction):
        outcome = await _summarise_in_chunks(
            ctx, session, span, summary, summary_model, part, abort
        )
    else:
        outcome, summary = await _summarise_whole(
            ctx, session, summary, summary_model, request, abort
        )
    if outcome != "stop":
        return outcome
    await carry_into(ctx, session, summary, span.summarised, model)  # pins and the file ledger
    shorten = span.tail_tokens if span.oversize else None
    await install(ctx, session, request_msg, part, model, summary, span.tail, span.replay, shorten)
    return "stop"


async def _summarise_whole(
    ctx: EngineContext,
    session: Session,
    summary: AssistantMessage,
    summary_model: ModelInfo,
    request: ModelRequest,
    abort: asyncio.Event,
) -> tuple[StepOutcome, AssistantMessage]:
    """One summariser call. A model that calls a tool instead of answering is asked once
    more with tools disabled (`tool_choice: none`, which costs the cached prefix)."""
    directory = Path(session.directory)
    for attempt in range(2):
        processor = StepProcessor(ctx, summary, directory, abort, summary_model, run_tools=False)
        outcome = await processor.run(request)
        if outcome != "stop":
            return outcome, summary
        if summary.finish == "tool_calls":
            summary.finish = "stop"  # its tool calls are never run, nor sent back
        if processor.text is not None and processor.text.text.strip():
            await ctx.db.upsert_message(summary, flush=True)
            return outcome, summary
        if attempt == 1:
            break
        summary.error = ErrorInfo(kind="compaction", message="Called a tool instead of answering.")
        await ctx.db.upsert_message(summary, flush=True)
        ctx.publish(MessageUpdated(info=summary))
        summary = AssistantMessage(id=message_id(), **summary.model_dump(include=_ASKED_AGAIN))
        request = request.model_copy(update={"options": {**request.options, "tool_choice": "none"}})
    raise CompactionError("The summariser answered without a summary.")


async def _summarise_in_chunks(
    ctx: EngineContext,
    session: Session,
    span: Span,
    summary: AssistantMessage,
    summary_model: ModelInfo,
    part: CompactionPart,
    abort: asyncio.Event,
) -> StepOutcome:
    """A span too large for one request: the fewest chunks the window allows, each
    summary carried into the next; the last one is streamed into `summary`."""
    directory = Path(session.directory)
    system, chunks = chunk_plan(ctx, span.summarised, summary_model, directory, span.anchored)
    api_base, api_key = credentials(summary_model.id, ctx.config)
    earlier: str | None = None

    def request(chunk: list[dict[str, Any]]) -> ModelRequest:
        messages = _summary_messages(
            system, chunk, earlier, part.instructions, summary.todos, summary.plan
        )
        return ModelRequest(
            model=summary_model.id, api_base=api_base, api_key=api_key, messages=messages
        )

    for chunk in chunks[:-1]:
        earlier = await unless_aborted(complete_text(request(chunk)), abort)
        if earlier is None:
            return "aborted"
    return await StepProcessor(ctx, summary, directory, abort, summary_model, run_tools=False).run(
        request(chunks[-1])
    )


async def record_failure(
    ctx: EngineContext, request_msg: MessageWithParts, model: str, message: str
) -> None:
    """A summary message holding the error: the request counts as answered."""
    info = AssistantMessage(
        id=message_id(),
        session_id=request_msg.info.session_id,
        parent_id=request_msg.info.id,
        model=model,
        agent="compaction",
        summary=True,
        completed=now_ms(),
        error=ErrorInfo(kind="compaction", message=message),
    )
    await ctx.db.upsert_message(info, flush=True)
    ctx.publish(MessageUpdated(info=info))
