"""`agent-tui context`: estimated tokens by category and the next compaction threshold."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pydantic import BaseModel

from agent_tui.budget.overflow import prompt_and_output, threshold_tokens
from agent_tui.budget.tokens import count_tokens
from agent_tui.config.settings import Config
from agent_tui.context.memory_report import memory_lines
from agent_tui.provider import remote
from agent_tui.provider.limits import ModelInfo
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    TextPart,
    ToolPart,
    ToolStateCompleted,
)
from agent_tui.scope import limits
from agent_tui.step.history import model_of
from agent_tui.step.media import image_tokens, part_image_tokens
from agent_tui.step.messages import filter_compacted, summary_text, tool_result_text
from agent_tui.step.system import build_system, memory_of
from agent_tui.workspace.describe import trust_lines
from agent_tui.workspace.skipped import context_lines
from agent_tui.workspace.workspace import Workspace


class ContextBreakdown(BaseModel):
    model: str
    system_prompt: int = 0
    tool_definitions: int = 0
    user_text: int = 0
    assistant_text: int = 0
    tool_outputs: int = 0
    pruned: int = 0
    """Tokens sent for cleared outputs (their placeholders)."""
    pruned_saved: int = 0
    """Tokens those outputs would cost if they were still sent."""
    summary: int = 0
    context_limit: int = 0
    window_source: str = ""
    """Where the window comes from (config, litellm, the server's answer, learned)."""
    threshold: int = 0
    """Automatic compaction fires when a step's input + cache.read + output exceeds this."""
    threshold_share: float = 0
    """`compaction.threshold` (of usable); 0: automatic compaction is off."""
    last_step_tokens: int = 0
    compacted: bool = False


def breakdown(
    history: list[MessageWithParts],
    model: ModelInfo,
    config: Config,
    directory: Path,
    tool_definitions: list[dict],
) -> ContextBreakdown:
    count = lambda text: count_tokens(text, model.id)  # noqa: E731
    system, _ = build_system(model.id, directory, config)
    result = ContextBreakdown(
        model=model.id,
        system_prompt=sum(count(s) for s in system),
        tool_definitions=count(json.dumps(tool_definitions)) if tool_definitions else 0,
        context_limit=model.limit.context,
        window_source=model.window_source,
        threshold=threshold_tokens(model.limit, config.compaction),
        threshold_share=config.compaction.threshold if config.compaction.auto else 0,
    )
    for message in filter_compacted(history):
        info = message.info
        if isinstance(info, AssistantMessage) and info.summary:
            result.compacted = True
            # its text in force: the person's edit, if any
            result.summary += count(summary_text(message))
            continue
        for part in message.parts:
            if isinstance(part, TextPart) and not part.ignored:
                tokens = count(part.text)
                if info.role == "user":
                    result.user_text += tokens
                else:
                    result.assistant_text += tokens
            elif isinstance(part, ToolPart):
                result.assistant_text += count(part.tool + json.dumps(part.state.input))
                state = part.state
                if isinstance(state, ToolStateCompleted) and state.time.compacted:
                    result.pruned += count(tool_result_text(part))
                    result.pruned_saved += count(state.output) + sum(
                        image_tokens(a.width, a.height, model.id) for a in state.attachments
                    )
                else:
                    result.tool_outputs += count(tool_result_text(part))
                    result.tool_outputs += part_image_tokens(part, model.id)
        if isinstance(info, AssistantMessage) and info.finish:
            result.last_step_tokens = prompt_and_output(info.tokens)
    return result


def render(b: ContextBreakdown) -> str:
    rows = [
        ("System prompt", b.system_prompt),
        ("Tool definitions", b.tool_definitions),
        ("User text", b.user_text),
        ("Assistant text and tool calls", b.assistant_text),
        ("Tool outputs", b.tool_outputs),
        ("Pruned outputs (placeholders)", b.pruned),
        ("Summary", b.summary),
    ]
    width = max(len(name) for name, _ in rows)
    lines = [f"Context for {b.model} (estimated with the local tokenizer)", ""]
    for name, tokens in rows:
        share = f"{tokens * 100 / b.context_limit:5.1f}%" if b.context_limit else ""
        lines.append(f"  {name:<{width}}  {tokens:>9,}  {share}")
    lines.append(f"  {'Total':<{width}}  {sum(tokens for _, tokens in rows):>9,}")
    lines.append("")
    if b.pruned_saved:
        lines.append(f"Pruning saves about {b.pruned_saved:,} tokens of old tool outputs.")
    if b.context_limit:
        source = f" ({b.window_source})" if b.window_source else ""
        last = f"last step: {b.last_step_tokens:,}"
        when = (
            f"Automatic compaction fires when a step uses more than {b.threshold:,} ({last}), "
            f"{b.threshold_share:.0%} of usable (compaction.threshold)."
            if b.threshold_share
            else f"Automatic compaction is off (compaction.auto; {last}): /compact compacts."
        )
        lines.append(f"Context window: {b.context_limit:,} tokens{source}. {when}")
    else:
        lines.append(
            f'Context window unknown for this model: set models."{b.model}".limit.context '
            "to enable context % and automatic compaction."
        )
    return "\n".join(lines)


async def report(
    workspace: Workspace, where: Path, history: list[MessageWithParts], model: str | None
) -> str:
    """What fills the context window (`/context`) for `model` (else the history's), as
    text: with no history, what a first request in `where` would carry."""
    config = workspace.config
    model = model or model_of(history, config.model)
    info = await limits(config, model)
    tools = workspace.registry.definitions()
    # Counting tokens loads a tokenizer the first time: off the event loop.
    result = await asyncio.to_thread(breakdown, history, info, config, where, tools)
    memory = await asyncio.to_thread(
        lambda: memory_lines(memory_of(where, config), history, where, model)
    )
    withheld = workspace.tool_env.withheld_line()
    sandbox = await workspace.sandbox.status_line()
    lines = [render(result), *memory, withheld, sandbox, *workspace.lsp.status_lines()]
    lines += workspace.hooks.status_lines()
    lines += trust_lines(workspace)
    lines += context_lines(workspace)
    lines.append(remote.describe())
    return "\n".join(lines)
