"""Summary compaction: an LLM-written summary becomes the new start of the history."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.errors import CompactionError
from agent_tui.events import MessageUpdated, SessionCompacted, SessionUpdated
from agent_tui.ids import message_id, now_ms, part_id
from agent_tui.provider.auth import credentials
from agent_tui.provider.limits import ModelInfo, model_info
from agent_tui.provider.stream import ModelRequest, complete_text
from agent_tui.session.chunks import chunk_messages, flatten_for_summary
from agent_tui.session.context import EngineContext
from agent_tui.session.history import load_history
from agent_tui.session.messages import CONTINUE_TEXT, to_model_messages
from agent_tui.session.overflow import fits, tail_budget, usable_tokens, user_budget
from agent_tui.session.processor import StepOutcome, StepProcessor
from agent_tui.session.request import build_request, estimate_tokens, provider_scale
from agent_tui.session.restate import choose_restated
from agent_tui.session.tail import choose_tail, shorten_step
from agent_tui.session.tokens import count_tokens
from agent_tui.storage.models import (
    AssistantMessage,
    CompactionPart,
    ErrorInfo,
    MessageWithParts,
    Session,
    TextPart,
    ToolPart,
    UserMessage,
)

NO_PROGRESS_MESSAGE = (
    "Compaction could not make the conversation fit the model's context window. "
    "Nothing was lost: start a new session (/new, or `agent-tui run` without --continue), "
    "or choose a model with a larger window."
)
OVERFLOW_ADVICE = (
    "It still did not fit after compacting. Start a new session (/new, or `agent-tui run` "
    "without --continue), ask for less output at once, or choose a model with a larger window."
)
SUMMARY_REQUEST = "Summarise the conversation above following the structure in your instructions."
EARLIER_SUMMARY_SHARE = 0.15
"""Room kept in each chunk request for the summary of the chunks before it."""
MIN_CHUNK_TOKENS = 1_000


async def create_request(
    ctx: EngineContext,
    session_id: str,
    *,
    auto: bool,
    model: str,
    overflow: bool = False,
    instructions: str | None = None,
) -> MessageWithParts:
    """A user message holding a compaction part; the loop processes it first."""
    info = UserMessage(id=message_id(), session_id=session_id, model=model)
    part = CompactionPart(
        id=part_id(),
        session_id=session_id,
        message_id=info.id,
        auto=auto,
        overflow=overflow,
        instructions=instructions or None,
    )
    return await ctx.add_message(info, part)


def compaction_prompt(ctx: EngineContext, directory: Path) -> str:
    """config `compaction.prompt` (a file path or the text itself) or prompts/compaction.txt."""
    custom = ctx.config.compaction.prompt
    if custom:
        for candidate in (Path(custom).expanduser(), directory / custom):
            try:
                if candidate.is_file():
                    return candidate.read_text(encoding="utf-8")
            except OSError:
                continue
        return custom
    return paths.read_prompt("compaction.txt")


def _is_anchor(prior: list[MessageWithParts]) -> bool:
    return (
        len(prior) > 1
        and any(isinstance(p, CompactionPart) for p in prior[0].parts)
        and isinstance(prior[1].info, AssistantMessage)
        and prior[1].info.summary
    )


def _summary_messages(
    system: str, chunk: list[dict[str, Any]], earlier: str | None, instructions: str | None
) -> list[dict[str, Any]]:
    """One chunk of a span too large for one request, as a plain transcript."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    if earlier:
        messages.append({"role": "user", "content": f"Earlier summary of this session:\n{earlier}"})
    messages.extend(chunk)
    final = SUMMARY_REQUEST
    if instructions:
        final += f"\n\nAdditional instructions from the person:\n{instructions}"
    if messages[-1]["role"] == "user":
        messages[-1] = {"role": "user", "content": messages[-1]["content"] + "\n\n" + final}
    else:
        messages.append({"role": "user", "content": final})
    return messages


async def _abortable(coro: Any, abort: asyncio.Event) -> Any:
    task = asyncio.ensure_future(coro)
    waiter = asyncio.ensure_future(abort.wait())
    done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()
    return None


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
    from the summarised span, the newest steps verbatim, then what came after."""
    config = ctx.config
    index = next(i for i, m in enumerate(history) if m.info.id == request_msg.info.id)
    prior = history[:index]
    anchored = _is_anchor(prior)
    candidates = prior[2:] if anchored else prior
    if session.compaction_id:
        candidates = [m for m in candidates if m.info.id > session.compaction_id]

    # Budgets are shares of the window, which the provider measures: convert them to
    # local token counts by how the provider counted the last step.
    scale = provider_scale(
        prior,
        model=model.id,
        directory=Path(session.directory),
        config=config,
        tools=ctx.registry.definitions(),
    )
    tail_tokens = int(tail_budget(model.limit, config.compaction) / scale)
    replay: MessageWithParts | None = None
    tail: list[MessageWithParts] = []
    oversize = False
    if part.overflow:
        # The provider refused the request: keep no tail, ask the question again after.
        users = [
            m
            for m in candidates
            if isinstance(m.info, UserMessage)
            and any(isinstance(p, TextPart) and not p.synthetic for p in m.parts)
        ]
        replay = users[-1] if users else None
    else:
        tail, oversize = choose_tail(candidates, tail_tokens, model.id)
    summarised = [m for m in prior if m not in tail and m is not replay]
    new_content = summarised[2:] if anchored else summarised
    if not new_content and replay is None:
        raise CompactionError("Nothing to compact yet: the session has no new messages.")
    earlier = (
        prior[1].info.restated if anchored and isinstance(prior[1].info, AssistantMessage) else []
    )
    user_tokens = int(user_budget(model.limit, config.compaction) / scale)
    restated = choose_restated(new_content, earlier, user_tokens, model.id)

    summary_model = (
        model_info(config.compaction.model, config) if config.compaction.model else model
    )
    summary = AssistantMessage(
        id=message_id(),
        session_id=session.id,
        parent_id=request_msg.info.id,
        model=summary_model.id,
        agent="compaction",
        summary=True,
        restated=restated,
    )
    instruction = _instruction(ctx, Path(session.directory), anchored, part.instructions)
    request = _whole_span_request(ctx, session, summarised, summary_model, instruction)
    if request is None:
        outcome = await _summarise_in_chunks(
            ctx, session, summarised, summary, summary_model, anchored, part, abort
        )
    else:
        outcome, summary = await _summarise_whole(
            ctx, session, summary, summary_model, request, abort
        )
    if outcome != "stop":
        return outcome

    session.compaction_id = request_msg.info.id
    session.tail_start_id = tail[0].info.id if tail else None
    if oversize:
        await shorten_step(ctx, tail[-1], tail_tokens, model.id)
    summary.context_estimate = await _check_converged(ctx, session, model)
    summary.context_limit = model.limit.context  # context % is of the session's model
    summary.context_usable = usable_tokens(model.limit, config.compaction)
    await ctx.db.upsert_message(summary, flush=True)
    await ctx.db.update_session(session)
    ctx.publish(SessionUpdated(session=session))
    ctx.publish(
        SessionCompacted(session_id=session.id, auto=part.auto, summary_message_id=summary.id)
    )
    if replay is not None:
        await _add_user_text(ctx, session.id, request_msg, _text_of(replay), synthetic=False)
    elif part.auto:
        await _add_user_text(ctx, session.id, request_msg, CONTINUE_TEXT, synthetic=True)
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
        answered = processor.text is not None and processor.text.text.strip()
        if answered or attempt == 1:
            if not answered:
                raise CompactionError("The summariser answered without a summary.")
            await ctx.db.upsert_message(summary, flush=True)
            return outcome, summary
        summary.error = ErrorInfo(kind="compaction", message="Called a tool instead of answering.")
        await ctx.db.upsert_message(summary, flush=True)
        ctx.publish(MessageUpdated(info=summary))
        summary = AssistantMessage(
            id=message_id(),
            session_id=summary.session_id,
            parent_id=summary.parent_id,
            model=summary.model,
            agent=summary.agent,
            summary=True,
            restated=summary.restated,
        )
        request = request.model_copy(update={"options": {**request.options, "tool_choice": "none"}})
    raise AssertionError("unreachable")


def _instruction(
    ctx: EngineContext, directory: Path, anchored: bool, instructions: str | None
) -> str:
    """The compaction prompt, sent as the last user message of the summary request."""
    text = compaction_prompt(ctx, directory).strip()
    if anchored:
        text += "\n\n" + paths.read_prompt("compaction_anchor.txt").strip()
    text += "\n\n" + SUMMARY_REQUEST
    if instructions:
        text += f"\n\nAdditional instructions from the person:\n{instructions}"
    return text


def _whole_span_request(
    ctx: EngineContext,
    session: Session,
    summarised: list[MessageWithParts],
    summary_model: ModelInfo,
    instruction: str,
) -> ModelRequest | None:
    """The summary request in one call: the conversation's own system prompt, tools and
    messages (so a provider's prompt cache serves it at a tenth of the price), then the
    instruction. No `tool_choice`: changing it invalidates Anthropic's cached messages,
    so the instruction forbids tools and any call is ignored. None when it does not fit
    the summarising model's window."""
    request, _ = build_request(
        summarised,
        model=summary_model.id,
        directory=Path(session.directory),
        config=ctx.config,
        tools=ctx.registry.definitions(),
        session_id=session.id,
        final_instruction=instruction,
    )
    scale = provider_scale(
        summarised,
        model=summary_model.id,
        directory=Path(session.directory),
        config=ctx.config,
        tools=request.tools,
    )
    size = estimate_tokens(request.messages, request.tools, summary_model.id) * scale
    if not fits(int(size), summary_model.limit, ctx.config.compaction):
        return None
    return request


async def _summarise_in_chunks(
    ctx: EngineContext,
    session: Session,
    summarised: list[MessageWithParts],
    summary: AssistantMessage,
    summary_model: ModelInfo,
    anchored: bool,
    part: CompactionPart,
    abort: asyncio.Event,
) -> StepOutcome:
    """A span too large for one request: the fewest chunks the window allows, each
    summary carried into the next; the last one is streamed into `summary`."""
    config = ctx.config
    system = compaction_prompt(ctx, Path(session.directory))
    if anchored:
        system += "\n\n" + paths.read_prompt("compaction_anchor.txt")
    part_ids = {p.call_id: p.id for m in summarised for p in m.parts if isinstance(p, ToolPart)}
    transcript = flatten_for_summary(to_model_messages(summarised), part_ids)
    budget = usable_tokens(summary_model.limit, config.compaction)
    reserve = count_tokens(system, summary_model.id) + int(budget * EARLIER_SUMMARY_SHARE)
    chunks = chunk_messages(transcript, max(budget - reserve, MIN_CHUNK_TOKENS), summary_model.id)
    api_base, api_key = credentials(summary_model.id, config)
    earlier: str | None = None
    for chunk in chunks[:-1]:
        request = ModelRequest(
            model=summary_model.id,
            api_base=api_base,
            api_key=api_key,
            messages=_summary_messages(system, chunk, earlier, part.instructions),
        )
        earlier = await _abortable(complete_text(request), abort)
        if earlier is None:
            return "aborted"
    request = ModelRequest(
        model=summary_model.id,
        api_base=api_base,
        api_key=api_key,
        messages=_summary_messages(system, chunks[-1], earlier, part.instructions),
    )
    return await StepProcessor(
        ctx, summary, Path(session.directory), abort, summary_model, run_tools=False
    ).run(request)


async def _check_converged(ctx: EngineContext, session: Session, model: ModelInfo) -> int:
    """The new history must fit; drop the kept tail if needed, else stop clearly.
    Returns the estimated size of the new history."""
    for _ in range(2):
        history = await load_history(ctx, session)
        request, _ = build_request(
            history,
            model=model.id,
            directory=Path(session.directory),
            config=ctx.config,
            tools=ctx.registry.definitions(),
            session_id=session.id,
        )
        size = estimate_tokens(request.messages, request.tools, model.id)
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


def _text_of(message: MessageWithParts) -> str:
    return "\n".join(p.text for p in message.parts if isinstance(p, TextPart) and not p.synthetic)


async def _add_user_text(
    ctx: EngineContext, session_id: str, like: MessageWithParts, text: str, *, synthetic: bool
) -> None:
    assert isinstance(like.info, UserMessage)
    info = UserMessage(
        id=message_id(), session_id=session_id, model=like.info.model, agent=like.info.agent
    )
    part = TextPart(
        id=part_id(), session_id=session_id, message_id=info.id, text=text, synthetic=synthetic
    )
    await ctx.add_message(info, part)


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
