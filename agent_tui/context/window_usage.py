"""Context usage for the sidebar and `sessions --json`: tokens, percent, cost."""

from __future__ import annotations

from pydantic import BaseModel

from agent_tui.records import AssistantMessage


class ContextUsage(BaseModel):
    tokens: int = 0
    """input + output + reasoning + cache.read + cache.write of the last finished step."""
    limit: int = 0
    """The model's context window; 0 when unknown."""
    percent: float | None = None
    """tokens / limit * 100, None when the window is unknown."""
    threshold: int = 0
    """Tokens at which automatic compaction fires (0 = unknown)."""
    cost: float = 0.0
    """USD spent in the session so far."""
    cache_read: int = 0
    """Prompt tokens of the last step read from the provider's prompt cache."""
    cache_write: int = 0
    """Prompt tokens of the last step written to the prompt cache."""
    cache_share: float | None = None
    """cache_read / all prompt tokens of the last step, in percent (None before a step)."""


def context_usage(last_step: AssistantMessage | None, cost: float) -> ContextUsage:
    if last_step is None:
        return ContextUsage(cost=cost)
    tokens = last_step.tokens.total
    if last_step.summary and last_step.context_estimate is not None:
        tokens = last_step.context_estimate  # what the history occupies after compaction
    limit = last_step.context_limit
    percent = round(tokens * 100 / limit, 1) if limit else None
    step = last_step.tokens
    prompt = step.input + step.cache.read + step.cache.write
    return ContextUsage(
        tokens=tokens,
        limit=limit,
        percent=percent,
        cost=cost,
        threshold=last_step.context_threshold or last_step.context_usable,
        cache_read=step.cache.read,
        cache_write=step.cache.write,
        cache_share=round(step.cache.read * 100 / prompt, 1) if prompt else None,
    )
