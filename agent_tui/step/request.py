"""Assemble the next model request from the history and estimate its size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.budget.overflow import prompt_and_output
from agent_tui.budget.tokens import count_tokens
from agent_tui.config.settings import Config, ReasoningConfig
from agent_tui.engine_context import EngineContext
from agent_tui.project.agents import AgentInfo
from agent_tui.provider.auth import credentials
from agent_tui.provider.shapes import cache_style
from agent_tui.provider.stream_events import ModelRequest
from agent_tui.records import AssistantMessage, MessageWithParts, Session, ToolPart
from agent_tui.step.cache import mark_breakpoints
from agent_tui.step.media import content_image_tokens, image_placement, part_image_tokens
from agent_tui.step.memory_rules import rule_reminders
from agent_tui.step.messages import (
    last_finished_assistant,
    to_model_messages,
    tool_result_text,
)
from agent_tui.step.system import base_prompt_name, build_system, memory_of

MESSAGE_OVERHEAD_TOKENS = 4
SCALE_BOUNDS = (0.5, 2.0)
"""Provider token counts stay within this factor of the local estimate."""


def _content_text(content: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]], model: str) -> int:
    """A local estimate of a request's input tokens (provider usage is the truth)."""
    total = 0
    for message in messages:
        content = message.get("content")
        total += MESSAGE_OVERHEAD_TOKENS + count_tokens(_content_text(content), model)
        total += content_image_tokens(content, model)  # 0 for text content
        for call in message.get("tool_calls") or []:
            fn = call["function"]
            total += count_tokens(fn["name"] + fn["arguments"], model)
        for block in message.get("thinking_blocks") or []:
            total += count_tokens(block.get("thinking") or block.get("data") or "", model)
    if tools:
        total += count_tokens(json.dumps(tools), model)
    return total


def size_bound(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """An upper bound of `estimate_tokens` that needs no tokenizer: every token covers at
    least one byte of its text, and a message's JSON is longer than its overhead."""
    return len(json.dumps(messages)) + len(json.dumps(tools))


def estimate_next(
    history: list[MessageWithParts],
    request: ModelRequest,
    last: AssistantMessage | None,
    scale: float = 1.0,
) -> int:
    """The size of `request`: the provider's usage of the last finished step plus a local
    count of what came after it (its tool outputs, newer messages), times `scale` (how the
    provider counts compared with the local tokenizer: `provider_scale`). Only new content
    is tokenized, so this stays cheap however long the history after the boundary is.
    Without such a step (new session, just compacted) everything is counted locally."""
    model = request.model
    if last is None or last.tokens.total == 0:
        return int(estimate_tokens(request.messages, request.tools, model) * scale)
    results, newer = _since(history, last)
    local = sum(
        MESSAGE_OVERHEAD_TOKENS
        + count_tokens(tool_result_text(part), model)
        + part_image_tokens(part, model)
        for part in results
    )
    local += estimate_tokens(to_model_messages(newer), [], model)
    # Cache reads and writes are prompt too.
    return prompt_and_output(last.tokens) + int(local * scale)


def next_size_bound(
    history: list[MessageWithParts],
    request: ModelRequest,
    last: AssistantMessage | None,
    scale: float = 1.0,
) -> int:
    """An upper bound of `estimate_next` that needs no tokenizer (`size_bound`'s bytes for
    what it would count locally), so a continued session's first request need not wait for
    the tokenizer's load when even this bound fits."""
    if last is None or last.tokens.total == 0:
        return int(size_bound(request.messages, request.tools) * scale)
    results, newer = _since(history, last)
    local = sum(
        MESSAGE_OVERHEAD_TOKENS
        + len(json.dumps(tool_result_text(part)))
        + part_image_tokens(part, request.model)
        for part in results
    )
    local += size_bound(to_model_messages(newer), [])
    return prompt_and_output(last.tokens) + int(local * scale)


def _since(
    history: list[MessageWithParts], last: AssistantMessage
) -> tuple[list[ToolPart], list[MessageWithParts]]:
    """What the provider's usage of `last` did not count: its tool results (sent after
    it) and the messages newer than it."""
    results: list[ToolPart] = []
    newer: list[MessageWithParts] = []
    for message in history:
        if message.info.id == last.id:
            results = [p for p in message.parts if isinstance(p, ToolPart) and not p.ignored]
        elif message.info.id > last.id:
            newer.append(message)
    return results, newer


def _append_user_text(messages: list[dict[str, Any]], text: str) -> None:
    """Add a text block at the very end, as part of the last user turn (roles alternate).
    The last message is replaced, never changed in place: it may be shared."""
    block = {"type": "text", "text": text}
    last = messages[-1]
    if last["role"] == "user":
        content = last["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        messages[-1] = {**last, "content": [*content, block]}
    else:
        messages.append({"role": "user", "content": [block]})


def model_options(
    model: str,
    config: Config,
    session_id: str | None,
    reasoning: ReasoningConfig | None = None,
) -> dict[str, Any]:
    """litellm parameters beyond the messages: the OpenAI prompt cache key, reasoning
    (an agent's `reasoning` over the model's)."""
    settings = config.model_settings(model)
    options: dict[str, Any] = {}
    if settings.cache and session_id and cache_style(model) == "openai":
        options["prompt_cache_key"] = session_id
    reasoning = reasoning or settings.reasoning
    if reasoning is not None and reasoning.budget_tokens:
        options["thinking"] = {"type": "enabled", "budget_tokens": reasoning.budget_tokens}
    elif reasoning is not None and reasoning.effort:
        options["reasoning_effort"] = reasoning.effort
    return options


def agent_header(agent: AgentInfo | None, model: str) -> str | None:
    """The first system block of an agent's requests: its prompt, or the base prompt of
    the model family, then a built-in's own rules (plan mode). None: the base prompt.
    The same bytes at every step of an agent, so the provider's cache keeps it."""
    if agent is None or (agent.prompt is None and agent.instructions is None):
        return None
    base = agent.prompt or paths.read_prompt(base_prompt_name(model))
    return "\n\n".join(text.strip() for text in (base, agent.instructions) if text)


def build_request(
    history: list[MessageWithParts],
    *,
    model: str,
    directory: Path,
    config: Config,
    tools: list[dict[str, Any]],
    reminder_after: str | None = None,
    final_instruction: str | None = None,
    session_id: str | None = None,
    budget_reminder: str | None = None,
    agent: AgentInfo | None = None,
) -> tuple[ModelRequest, list[str]]:
    """(request, notes). System prompt as two messages, then the conversation; for Claude
    models the cache breakpoints (step/cache.py). Everything that changes from step
    to step comes after the cached prefix: earlier messages are rebuilt byte for byte.
    `budget_reminder` goes last, after the breakpoints, so no cache ever holds it.
    `agent` brings its prompt, temperature and reasoning (None: the build agent's)."""
    system, notes = build_system(model, directory, config, agent_header(agent, model))
    anthropic = cache_style(model) == "anthropic"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": text} for text in system if text
    ]
    messages.extend(
        to_model_messages(
            history,
            reminder_after=reminder_after,
            keep_thinking=anthropic,
            images=image_placement(model, config),
            # Path-scoped rules and the memory of folders below, after the result of the
            # call first on a file they are about.
            after_result=rule_reminders(history, memory_of(directory, config), directory),
        )
    )
    if final_instruction:
        _append_user_text(messages, final_instruction)
    if anthropic and config.model_settings(model).cache:
        messages = mark_breakpoints(messages)
    if budget_reminder:
        # Joins the last user turn (tool results and user text are one API message), so
        # the breakpoints marked above stay on the same blocks.
        _append_user_text(messages, budget_reminder)
    api_base, api_key = credentials(model, config)
    # Built from validated models: skip re-validating a large message list every step.
    request = ModelRequest.model_construct(
        model=model,
        messages=messages,
        tools=tools,
        api_base=api_base,
        api_key=api_key,
        max_tokens=None,
        temperature=agent.temperature if agent else None,
        options=model_options(model, config, session_id, agent.reasoning if agent else None),
    )
    return request, notes


def history_tokens(
    ctx: EngineContext, session: Session, history: list[MessageWithParts], model: str
) -> int:
    """The local count of the request `history` makes in `session` (system prompt and
    every tool included; no reminders)."""
    request, _ = build_request(
        history,
        model=model,
        directory=Path(session.directory),
        config=ctx.config,
        tools=ctx.registry.definitions(),
    )
    return estimate_tokens(request.messages, request.tools, model)


def session_scale(
    ctx: EngineContext, session: Session, history: list[MessageWithParts], model: str
) -> float:
    """`provider_scale` of `history` in `session`: its directory, the config, every tool."""
    directory, tools = Path(session.directory), ctx.registry.definitions()
    return provider_scale(history, model=model, directory=directory, config=ctx.config, tools=tools)


def provider_scale(
    history: list[MessageWithParts],
    *,
    model: str,
    directory: Path,
    config: Config,
    tools: list[dict[str, Any]],
) -> float:
    """How the provider counts compared with the local estimate: the newest finished
    step's prompt as the provider reported it, over the local count of the same request.
    Tokenizers differ by 10-40% (code, numbers, other languages); sizing a request that
    must fit the window by the provider's measure avoids both overflow and waste."""
    last = last_finished_assistant(history)
    if last is None or last.model != model:
        return 1.0
    prompt = last.tokens.input + last.tokens.cache.read + last.tokens.cache.write
    if not prompt:
        return 1.0
    before = [m for m in history if m.info.id < last.id]
    request, _ = build_request(before, model=model, directory=directory, config=config, tools=tools)
    local = estimate_tokens(request.messages, request.tools, model)
    low, high = SCALE_BOUNDS
    return min(max(prompt / local, low), high) if local else 1.0
