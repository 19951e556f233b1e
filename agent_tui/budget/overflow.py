"""When the context window is full: the usable budget and the overflow test."""

from __future__ import annotations

from agent_tui.config.settings import CompactionConfig, ModelLimit
from agent_tui.records import Tokens

TAIL_SHARE = 0.20
"""Newest steps kept verbatim after a compaction, as a share of usable. With the system
prompt, the summary and the person's words this leaves the prompt under half of usable
after compacting, so the next compaction is far away; at a 20k window it keeps the 3-5
newest tool results of ~750 tokens."""
TAIL_MIN = 1_000
TAIL_MAX = 40_000
"""Past this a verbatim tail adds cost to every step but no continuity: the summary
carries the older state."""
USER_SHARE = 0.05
USER_MAX = 10_000


UNKNOWN_OUTPUT_SHARE = 4
"""A window set without an output limit (`models.<id>.limit.context` alone) keeps at most
a quarter of it for the answer: output_token_max (32,000) would leave nothing of a 20k
window."""


def usable_tokens(limit: ModelLimit, config: CompactionConfig) -> int:
    """`limit.input or (limit.context - min(limit.output, output_token_max))`, minus
    `reserved`; without `limit.output`, at most a quarter of the window is kept for the
    answer. 0 when the window is unknown."""
    if limit.context == 0:
        return 0
    if limit.input:
        usable = limit.input
    else:
        output = min(limit.output or config.output_token_max, config.output_token_max)
        if limit.output is None:
            output = min(output, limit.context // UNKNOWN_OUTPUT_SHARE)
        usable = limit.context - output
    return max(usable - (config.reserved or 0), 0)


def threshold_tokens(limit: ModelLimit, config: CompactionConfig) -> int:
    """Where automatic compaction fires: `compaction.threshold` of usable (0: unknown)."""
    return int(usable_tokens(limit, config) * config.threshold)


def is_overflow(tokens: Tokens, limit: ModelLimit, config: CompactionConfig) -> bool:
    """`input + cache.read + cache.write + output > threshold`: a step whose fresh input is
    small because most of it was read from (or written to) the prompt cache still fills
    the window. Reasoning is left out: providers drop it from later requests (Anthropic
    keeps only the current tool-use turn's, which the next step's usage then reports as
    input). A context of 0 never overflows."""
    if limit.context == 0:
        return False
    return prompt_and_output(tokens) > threshold_tokens(limit, config)


def prompt_and_output(tokens: Tokens) -> int:
    """What a step leaves in the window: its whole prompt, cached or not, and its answer."""
    return tokens.input + tokens.cache.read + tokens.cache.write + tokens.output


def fits(estimate: int, limit: ModelLimit, config: CompactionConfig) -> bool:
    return limit.context == 0 or estimate <= usable_tokens(limit, config)


def under_threshold(estimate: int, limit: ModelLimit, config: CompactionConfig) -> bool:
    """The overflow pre-check: a request this size does not call for automatic compaction."""
    return limit.context == 0 or estimate <= threshold_tokens(limit, config)


def _share(limit: ModelLimit, config: CompactionConfig, share: float, low: int, high: int) -> int:
    """`share` of usable, between `low` and `high` (`low` when the window is unknown)."""
    return max(low, min(int(usable_tokens(limit, config) * share), high))


def tail_budget(limit: ModelLimit, config: CompactionConfig) -> int:
    """Tokens of newest steps kept verbatim after a compaction (`compaction.tail_tokens`)."""
    if config.tail_tokens is not None:
        return config.tail_tokens
    return _share(limit, config, TAIL_SHARE, TAIL_MIN, TAIL_MAX)


def user_budget(limit: ModelLimit, config: CompactionConfig) -> int:
    """Tokens of the person's own messages restated after a summary (`user_tokens`)."""
    if config.user_tokens is not None:
        return config.user_tokens
    return _share(limit, config, USER_SHARE, 0, USER_MAX)
