"""The verbatim tail a compaction keeps: the newest whole steps that fit a budget.

A step is one assistant message with all its tool calls and their results; it is never
split. The tail is counted in steps, not user turns: in agentic work one turn is often
the whole session, and the step the agent was in the middle of is what it needs most.
"""

from __future__ import annotations

from agent_tui.budget.tokens import count_tokens
from agent_tui.config.settings import TruncationConfig
from agent_tui.engine_context import EngineContext
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    ToolPart,
    ToolStateCompleted,
)
from agent_tui.step.messages import to_model_messages
from agent_tui.step.request import estimate_tokens
from agent_tui.tool.truncation import truncate_output_async

HINT_BYTES = 400
"""The truncation marker and the saved-path hint added to a preview."""
MIN_SHORTENED_BYTES = 1_000


def message_tokens(messages: list[MessageWithParts], model: str) -> int:
    return estimate_tokens(to_model_messages(messages), [], model)


def choose_tail(
    candidates: list[MessageWithParts], budget: int, model: str
) -> tuple[list[MessageWithParts], bool]:
    """(tail, oversize): the newest messages, whole steps and the user messages between
    them, while they fit `budget`; the oldest candidate is always summarised. The newest
    step is kept even when it alone is over budget (`oversize`: shorten it); a budget of
    0 keeps nothing."""
    if budget <= 0:
        return [], False
    kept: list[MessageWithParts] = []
    used = 0
    for message in reversed(candidates[1:]):
        size = message_tokens([message], model)
        if used + size > budget:
            if not kept and isinstance(message.info, AssistantMessage):
                return [message], True
            break
        kept.insert(0, message)
        used += size
    return kept, False


async def shorten_step(ctx: EngineContext, step: MessageWithParts, budget: int, model: str) -> None:
    """Fit an oversize tail step into `budget` by the truncation rules: each long tool
    output becomes a preview plus the path of the full text, which the model can read.
    The original output stays in the database."""
    outputs = [
        (p, p.state)
        for p in step.parts
        if isinstance(p, ToolPart) and isinstance(p.state, ToolStateCompleted)
    ]
    if not outputs:
        return
    sizes = [count_tokens(state.output, model) for _, state in outputs]
    rest = message_tokens([step], model) - sum(sizes)
    share = max(budget - rest, 0) // len(outputs)
    for (part, state), size in zip(outputs, sizes, strict=True):
        # The output's own characters per token: numbers and code run denser than prose.
        chars_per_token = len(state.output) / max(size, 1)
        max_bytes = max(int(share * chars_per_token) - HINT_BYTES, MIN_SHORTENED_BYTES)
        limits = TruncationConfig(max_lines=ctx.config.truncation.max_lines, max_bytes=max_bytes)
        text, meta = await truncate_output_async(state.output, limits, ctx.output_dir)
        if meta.get("truncated"):
            state.shortened = text
            await ctx.db.upsert_part(part, flush=True)
