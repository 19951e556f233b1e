"""Where the prompt-cache breakpoints go, checked on what litellm sends to Anthropic."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_tui.config.settings import Config, ModelConfig
from agent_tui.provider.shapes import cache_style
from agent_tui.records import AssistantMessage
from agent_tui.step.cache import MAX_BREAKPOINTS, mark_breakpoints
from agent_tui.step.request import model_options
from tests.conftest import write_config
from tests.engine_helpers import anthropic_body, count_breakpoints, open_engine
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage

TOOLS = [
    {
        "type": "function",
        "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}},
    }
]


def _call(call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": call_id})},
    }


def _conversation(steps: int, calls_per_step: int = 2) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "base prompt"},
        {"role": "system", "content": "environment and instructions"},
        {"role": "user", "content": [{"type": "text", "text": "do the work"}]},
    ]
    for step in range(steps):
        ids = [f"c{step}_{n}" for n in range(calls_per_step)]
        messages.append(
            {"role": "assistant", "content": f"step {step}", "tool_calls": [_call(i) for i in ids]}
        )
        messages.extend({"role": "tool", "tool_call_id": i, "content": f"out {i}"} for i in ids)
    return messages


def _marked_blocks(body: dict[str, Any]) -> list[tuple[str, int, str]]:
    """(where, message index, block type) of every cache_control in an Anthropic body."""
    found = [
        ("system", i, b["type"])
        for i, b in enumerate(body.get("system", []))
        if "cache_control" in b
    ]
    for index, message in enumerate(body["messages"]):
        for block in message["content"] if isinstance(message["content"], list) else []:
            if "cache_control" in block:
                found.append((message["role"], index, block["type"]))
    return found


def test_system_blocks_and_last_two_messages_are_marked() -> None:
    messages = _conversation(steps=3)
    marked = mark_breakpoints(messages)
    assert count_breakpoints(marked) == MAX_BREAKPOINTS
    body = anthropic_body(marked, TOOLS)
    last = len(body["messages"]) - 1
    assert _marked_blocks(body) == [
        ("system", 0, "text"),
        ("system", 1, "text"),
        ("assistant", last - 1, "tool_use"),  # the last block of the assistant message
        ("user", last, "tool_result"),  # the last of the merged tool results
    ]
    # Only the last block of each message is marked.
    assert "cache_control" not in body["messages"][last]["content"][0]


def test_marking_copies_and_leaves_the_input_alone() -> None:
    messages = _conversation(steps=2)
    before = copy.deepcopy(messages)
    mark_breakpoints(messages)
    assert messages == before


def test_a_user_message_after_a_text_answer_is_marked_on_its_last_block() -> None:
    messages = [
        {"role": "system", "content": "base"},
        {"role": "system", "content": "env"},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ]
    body = anthropic_body(mark_breakpoints(messages), TOOLS)
    assert _marked_blocks(body)[2:] == [("assistant", 1, "text"), ("user", 2, "text")]
    assert body["messages"][2]["content"][-1]["text"] == "b"


@settings(max_examples=60, deadline=None)
@given(
    systems=st.integers(min_value=0, max_value=4),
    steps=st.integers(min_value=0, max_value=6),
    calls=st.integers(min_value=1, max_value=4),
)
def test_never_more_than_four_breakpoints(systems: int, steps: int, calls: int) -> None:
    messages = _conversation(steps, calls)[2:]
    messages[:0] = [{"role": "system", "content": f"system {n}"} for n in range(systems)]
    marked = mark_breakpoints(messages)
    assert count_breakpoints(marked) <= MAX_BREAKPOINTS
    assert len(_marked_blocks(anthropic_body(marked, TOOLS))) <= MAX_BREAKPOINTS


def test_which_models_get_which_kind_of_caching() -> None:
    assert cache_style("anthropic/claude-sonnet-4-5") == "anthropic"
    assert cache_style("bedrock/anthropic.claude-sonnet-4-5-v1:0") == "anthropic"
    assert cache_style("openrouter/anthropic/claude-sonnet-4.5") == "anthropic"
    assert cache_style("vertex_ai/claude-sonnet-4-5") == "anthropic"
    assert cache_style("openai/gpt-5.1") == "openai"
    assert cache_style("gpt-4o") == "openai"
    assert cache_style("gemini/gemini-2.5-pro") == "implicit"
    assert cache_style("deepseek/deepseek-chat") == "implicit"


def test_prompt_cache_key_and_reasoning_options() -> None:
    config = Config()
    assert model_options("openai/gpt-5.1", config, "ses_1") == {"prompt_cache_key": "ses_1"}
    assert model_options("anthropic/claude-sonnet-4-5", config, "ses_1") == {}
    assert model_options("gemini/gemini-2.5-pro", config, "ses_1") == {}
    config.models["openai/gpt-5.1"] = ModelConfig.model_validate(
        {"cache": False, "reasoning": {"effort": "high"}}
    )
    assert model_options("openai/gpt-5.1", config, "ses_1") == {"reasoning_effort": "high"}
    config.models["anthropic/claude-sonnet-4-5"] = ModelConfig.model_validate(
        {"reasoning": {"effort": "low", "budget_tokens": 4096}}
    )
    assert model_options("anthropic/claude-sonnet-4-5", config, "s") == {
        "thinking": {"type": "enabled", "budget_tokens": 4096}
    }


async def test_openai_requests_carry_the_session_as_prompt_cache_key(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm)
    fake_llm.script(
        ToolCalls([Call("bash", '{"command": "echo hi"}')], usage=Usage(2_000, 50)),
        Text("done", usage=Usage(2_100, 10, cached_tokens=1_900)),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "go")
        export = await engine.ctx.db.export_session(session.id)
    assert [body.get("prompt_cache_key") for body in fake_llm.requests] == [session.id] * 2
    assert all(count_breakpoints(body["messages"]) == 0 for body in fake_llm.requests)
    last = [m.info for m in export.messages if isinstance(m.info, AssistantMessage)][-1]
    assert (last.tokens.input, last.tokens.cache.read, last.tokens.cache.write) == (200, 1_900, 0)
