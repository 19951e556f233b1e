"""Threshold arithmetic: usable = limit.input or (context - min(output, output_token_max))."""

from __future__ import annotations

import asyncio

import pytest

from agent_tui.budget.overflow import (
    is_overflow,
    tail_budget,
    usable_tokens,
    user_budget,
)
from agent_tui.config.settings import CompactionConfig, Config, ModelConfig, ModelLimit
from agent_tui.provider.limits import load_model_info
from agent_tui.records import CacheTokens, Tokens

DEFAULT = CompactionConfig()


# (model, litellm context, litellm output, usable) — usable computed by hand from the
# window and output limits in litellm's bundled model map.
REAL_MODELS = [
    ("anthropic/claude-sonnet-4-5", 200_000, 64_000, 200_000 - 32_000),
    ("openai/gpt-5.1", 272_000, 128_000, 272_000 - 32_000),
    ("gpt-5", 272_000, 128_000, 272_000 - 32_000),
    ("gemini/gemini-2.5-pro", 1_048_576, 65_536, 1_048_576 - 32_000),
    ("deepseek/deepseek-chat", 131_072, 8_192, 131_072 - 8_192),
]


@pytest.mark.parametrize(("model", "context", "output", "usable"), REAL_MODELS)
def test_real_model_thresholds(model: str, context: int, output: int, usable: int) -> None:
    info = asyncio.run(load_model_info(model, Config()))
    assert info.limit.context == context
    assert info.limit.output == output
    assert usable_tokens(info.limit, DEFAULT) == usable
    edge = Tokens(input=usable - 1_000, output=1_000)
    assert not is_overflow(edge, info.limit, DEFAULT)
    assert is_overflow(edge.model_copy(update={"output": 1_001}), info.limit, DEFAULT)


def test_cache_reads_and_writes_count_and_reasoning_does_not() -> None:
    limit = ModelLimit(context=10_000, output=2_000)  # usable 8,000
    assert usable_tokens(limit, DEFAULT) == 8_000
    assert is_overflow(Tokens(input=1_000, cache=CacheTokens(read=7_001)), limit, DEFAULT)
    # 90% read from the cache: fresh input alone is tiny, the prompt is not.
    assert is_overflow(
        Tokens(input=100, output=200, cache=CacheTokens(read=7_000, write=701)), limit, DEFAULT
    )
    assert not is_overflow(
        Tokens(input=100, output=200, cache=CacheTokens(read=7_000, write=700)), limit, DEFAULT
    )
    assert not is_overflow(
        Tokens(input=1_000, reasoning=50_000, cache=CacheTokens(write=6_000)), limit, DEFAULT
    )


def test_input_limit_wins_and_reserved_is_subtracted() -> None:
    limit = ModelLimit(context=400_000, input=272_000, output=128_000)
    assert usable_tokens(limit, DEFAULT) == 272_000
    assert usable_tokens(limit, CompactionConfig(reserved=10_000)) == 262_000


def test_output_token_max_caps_the_reserve() -> None:
    limit = ModelLimit(context=200_000, output=64_000)
    assert usable_tokens(limit, CompactionConfig(output_token_max=8_000)) == 192_000
    assert usable_tokens(ModelLimit(context=200_000), DEFAULT) == 200_000 - 32_000


def test_a_window_set_without_an_output_limit_keeps_most_of_it_usable() -> None:
    """`models.<id>.limit.context` alone (what the unknown-window notice asks for): at most
    a quarter is kept for the answer, never the 32,000 that would leave nothing."""
    assert usable_tokens(ModelLimit(context=50_000), DEFAULT) == 50_000 - 12_500
    assert usable_tokens(ModelLimit(context=20_000), DEFAULT) == 15_000
    assert usable_tokens(ModelLimit(context=4_096), DEFAULT) == 3_072


def test_unknown_window_never_overflows() -> None:
    limit = ModelLimit(context=0)
    assert usable_tokens(limit, DEFAULT) == 0
    assert not is_overflow(Tokens(input=10**9), limit, DEFAULT)


def test_config_overrides_litellm_limits() -> None:
    config = Config(
        models={
            "anthropic/claude-sonnet-4-5": ModelConfig(
                limit=ModelLimit.model_validate({"context": 1_000_000})
            )
        }
    )
    info = asyncio.run(load_model_info("anthropic/claude-sonnet-4-5", config))
    assert info.limit.context == 1_000_000
    assert info.limit.output == 64_000  # not overridden: litellm's value stays
    unknown = asyncio.run(load_model_info("openai/no-such-model", Config()))
    assert not unknown.known and unknown.limit.context == 0


def test_tail_and_user_budgets_are_clamped_shares_of_usable() -> None:
    # 200k window, 32k output reserve: usable 168,000.
    assert tail_budget(ModelLimit(context=200_000, output=64_000), DEFAULT) == 33_600
    assert user_budget(ModelLimit(context=200_000, output=64_000), DEFAULT) == 8_400
    assert tail_budget(ModelLimit(context=1_000_000, output=64_000), DEFAULT) == 40_000
    assert user_budget(ModelLimit(context=1_000_000, output=64_000), DEFAULT) == 10_000
    assert tail_budget(ModelLimit(context=20_000, output=4_000), DEFAULT) == 3_200
    assert user_budget(ModelLimit(context=20_000, output=4_000), DEFAULT) == 800
    assert tail_budget(ModelLimit(context=4_000, output=2_000), DEFAULT) == 1_000
    assert tail_budget(ModelLimit(context=8_000), CompactionConfig(tail_tokens=123)) == 123
    # The old key name still works.
    assert CompactionConfig.model_validate({"preserve_recent_tokens": 77}).tail_tokens == 77
