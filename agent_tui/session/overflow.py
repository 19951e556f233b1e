"""When the context window is full: the usable budget and the overflow test."""

from __future__ import annotations

from agent_tui.config import CompactionConfig, ModelLimit
from agent_tui.storage.models import Tokens

PRESERVE_RECENT_SHARE = 0.25
PRESERVE_RECENT_MIN = 2_000
PRESERVE_RECENT_MAX = 15_000


def usable_tokens(limit: ModelLimit, config: CompactionConfig) -> int:
    """`limit.input or (limit.context - min(limit.output, output_token_max))`, minus
    `reserved`. 0 when the window is unknown."""
    if limit.context == 0:
        return 0
    if limit.input:
        usable = limit.input
    else:
        output = min(limit.output or config.output_token_max, config.output_token_max)
        usable = limit.context - output
    return max(usable - (config.reserved or 0), 0)


def is_overflow(tokens: Tokens, limit: ModelLimit, config: CompactionConfig) -> bool:
    """`input + cache.read + cache.write + output > usable`: a step whose fresh input is
    small because most of it was read from (or written to) the prompt cache still fills
    the window. Reasoning is left out: providers drop it from later requests (Anthropic
    keeps only the current tool-use turn's, which the next step's usage then reports as
    input). A context of 0 never overflows."""
    if limit.context == 0:
        return False
    return prompt_and_output(tokens) > usable_tokens(limit, config)


def prompt_and_output(tokens: Tokens) -> int:
    """What a step leaves in the window: its whole prompt, cached or not, and its answer."""
    return tokens.input + tokens.cache.read + tokens.cache.write + tokens.output


def fits(estimate: int, limit: ModelLimit, config: CompactionConfig) -> bool:
    return limit.context == 0 or estimate <= usable_tokens(limit, config)


def preserve_recent_budget(limit: ModelLimit, config: CompactionConfig) -> int:
    """Tokens of newest whole turns kept verbatim after a compaction."""
    if config.preserve_recent_tokens is not None:
        return config.preserve_recent_tokens
    usable = usable_tokens(limit, config)
    if usable == 0:
        return PRESERVE_RECENT_MIN
    share = int(usable * PRESERVE_RECENT_SHARE)
    return max(PRESERVE_RECENT_MIN, min(share, PRESERVE_RECENT_MAX))
