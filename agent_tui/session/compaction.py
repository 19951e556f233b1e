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
from agent_tui.session.context import EngineContext
from agent_tui.session.history import load_history
from agent_tui.session.messages import CONTINUE_TEXT, to_model_messages
from agent_tui.session.overflow import fits, preserve_recent_budget, usable_tokens
from agent_tui.session.processor import StepOutcome, StepProcessor
from agent_tui.session.request import build_request, estimate_tokens
from agent_tui.session.tokens import count_tokens
from agent_tui.storage.models import (
    AssistantMessage,
    CompactionPart,
    ErrorInfo,
    MessageWithParts,
    Session,
    TextPart,
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
CHUNK_SHARE = 0.6  # of the summariser's usable window, per chunk of history


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


def _turns(messages: list[MessageWithParts]) -> list[list[MessageWithParts]]:
    turns: list[list[MessageWithParts]] = []
    for message in messages:
        if isinstance(message.info, UserMessage) or not turns:
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def message_tokens(messages: list[MessageWithParts], model: str) -> int:
    return estimate_tokens(to_model_messages(messages), [], model)


def choose_tail(
    candidates: list[MessageWithParts], budget: int, model: str
) -> list[MessageWithParts]:
    """The newest whole turns that fit `budget`; the oldest turn is always summarised."""
    turns = _turns(candidates)
    kept: list[list[MessageWithParts]] = []
    used = 0
    for turn in reversed(turns[1:]):
        if not isinstance(turn[0].info, UserMessage):
            break
        size = message_tokens(turn, model)
        if used + size > budget:
            break
        kept.insert(0, turn)
        used += size
    return [m for turn in kept for m in turn]


def flatten_for_summary(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Tool calls and results as text, consecutive roles merged: no tools are sent."""
    out: list[dict[str, Any]] = []

    def add(role: str, text: str) -> None:
        if not text:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"] += "\n\n" + text
        else:
            out.append({"role": role, "content": text})

    for message in messages:
        role = message["role"]
        content = message.get("content")
        if isinstance(content, list):
            text = "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
        else:
            text = content or ""
        if role == "tool":
            add("user", f"[Tool result]\n{text}")
            continue
        calls = [
            f"[Tool call {c['function']['name']}: {c['function']['arguments']}]"
            for c in message.get("tool_calls") or []
        ]
        add("assistant" if role == "assistant" else "user", "\n".join(filter(None, [text, *calls])))
    return out


def _cut(text: str, max_tokens: int, model: str) -> str:
    """Keep head and tail of a text too large for one chunk."""
    tokens = count_tokens(text, model)
    if tokens <= max_tokens:
        return text
    keep = max(int(len(text) * max_tokens / tokens / 2) - 50, 100)
    return f"{text[:keep]}\n\n[... {tokens - max_tokens} tokens omitted ...]\n\n{text[-keep:]}"


def chunk_messages(
    messages: list[dict[str, Any]], budget: int, model: str
) -> list[list[dict[str, Any]]]:
    chunks: list[list[dict[str, Any]]] = [[]]
    used = 0
    for message in messages:
        text = _cut(message["content"], budget, model)
        size = count_tokens(text, model) + 4
        if chunks[-1] and used + size > budget:
            chunks.append([])
            used = 0
        chunks[-1].append({"role": message["role"], "content": text})
        used += size
    return chunks


def _summary_messages(
    system: str, chunk: list[dict[str, Any]], earlier: str | None, instructions: str | None
) -> list[dict[str, Any]]:
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
    """Summarise what precedes `request_msg`; on success move the session's boundary."""
    config = ctx.config
    index = next(i for i, m in enumerate(history) if m.info.id == request_msg.info.id)
    prior = history[:index]
    anchored = _is_anchor(prior)
    candidates = prior[2:] if anchored else prior
    if session.compaction_id:
        candidates = [m for m in candidates if m.info.id > session.compaction_id]

    replay: MessageWithParts | None = None
    if part.overflow:
        users = [
            m
            for m in candidates
            if isinstance(m.info, UserMessage)
            and any(isinstance(p, TextPart) and not p.synthetic for p in m.parts)
        ]
        replay = users[-1] if users else None
        tail: list[MessageWithParts] = []
    else:
        tail = choose_tail(
            candidates, preserve_recent_budget(model.limit, config.compaction), model.id
        )
    summarised = [m for m in prior if m not in tail and m is not replay]
    new_content = summarised[2:] if anchored else summarised
    if not new_content and replay is None:
        raise CompactionError("Nothing to compact yet: the session has no new messages.")

    summary_model = (
        model_info(config.compaction.model, config) if config.compaction.model else model
    )
    system = compaction_prompt(ctx, Path(session.directory))
    if anchored:
        system += "\n\n" + paths.read_prompt("compaction_anchor.txt")
    transcript = flatten_for_summary(to_model_messages(summarised))
    budget = usable_tokens(summary_model.limit, config.compaction)
    prompt_tokens = count_tokens(system, summary_model.id) + 200
    chunk_budget = max(int(budget * CHUNK_SHARE) - prompt_tokens, 1_000) if budget else 0
    total = sum(count_tokens(m["content"], summary_model.id) for m in transcript)
    chunks = (
        chunk_messages(transcript, chunk_budget, summary_model.id)
        if (budget and total > chunk_budget)
        else [transcript]
    )

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
    summary = AssistantMessage(
        id=message_id(),
        session_id=session.id,
        parent_id=request_msg.info.id,
        model=summary_model.id,
        agent="compaction",
        summary=True,
    )
    outcome = await StepProcessor(
        ctx, summary, Path(session.directory), abort, summary_model, run_tools=False
    ).run(request)
    if outcome != "stop":
        return outcome

    session.compaction_id = request_msg.info.id
    session.tail_start_id = tail[0].info.id if tail else None
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
