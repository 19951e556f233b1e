"""System prompt assembly, the step limit, cost from the price map, custom compaction prompt."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
from pathlib import Path

import pytest

from agent_tui.config.settings import Config
from agent_tui.step.system import base_prompt_name, build_system
from tests.conftest import write_config
from tests.engine_helpers import is_summary_request, open_engine
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage


def test_instructions_are_found_walking_up(isolated: Path, tmp_path: Path) -> None:
    (isolated.parent / "AGENTS.md").write_text("PARENT RULES")
    sub = isolated / "pkg" / "mod"
    sub.mkdir(parents=True)
    (isolated / "CLAUDE.md").write_text("PROJECT RULES")
    config_dir = Path(os.environ["AGENT_TUI_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "AGENTS.md").write_text("GLOBAL RULES")
    (isolated / "extra.md").write_text("EXTRA RULES")
    subprocess.run(["git", "init", "-q", str(isolated)], check=True)
    config = Config(instructions=["extra.md"])
    (static, rest), notes = build_system("anthropic/claude-sonnet-4-5", isolated, config)
    assert "powered by Claude" in static
    assert rest.index("PROJECT RULES") < rest.index("PARENT RULES") < rest.index("GLOBAL RULES")
    assert "EXTRA RULES" in rest and notes == []
    assert f"Working directory: {isolated}" in rest
    assert "Is directory a git repo: yes" in rest
    assert f"Today's date: {dt.date.today().isoformat()}" in rest
    assert "Model: anthropic/claude-sonnet-4-5" in rest
    _, notes = build_system("openai/x", sub, Config(instructions=["missing.md"]))
    assert notes and "missing.md" in notes[0]


@pytest.mark.parametrize(
    ("model", "prompt"),
    [
        ("anthropic/claude-sonnet-4-5", "anthropic.txt"),
        ("openai/gpt-5.1", "openai.txt"),
        ("gemini/gemini-2.5-pro", "gemini.txt"),
        ("deepseek/deepseek-chat", "default.txt"),
    ],
)
def test_base_prompt_by_family(model: str, prompt: str) -> None:
    assert base_prompt_name(model) == prompt


async def test_step_limit_asks_for_a_summary_without_tools(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, max_steps=2)
    fake_llm.script(
        ToolCalls([Call("bash", '{"command": "echo 1"}')]), Text("Summary of what I did.")
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        result = await engine.prompt(session.id, "work forever")
        assert result is not None and result.outcome == "stop"
    first, last = fake_llm.requests
    assert first["tools"] and "tools" not in last
    assert "maximum number of steps" in json.dumps(last["messages"][-1])


async def test_cost_comes_from_the_price_map(isolated: Path, fake_llm: FakeOpenAI) -> None:
    write_config(isolated, fake_llm, model="openai/gpt-4o-mini", models={})
    fake_llm.script(Text("priced", usage=Usage(prompt_tokens=1_000_000, completion_tokens=0)))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "hi")
        summary = (await engine.ctx.db.session_summaries([session.id]))[session.id]
    assert summary.cost == pytest.approx(0.15)  # gpt-4o-mini: $0.15 per million input tokens
    assert summary.last_assistant is not None
    assert summary.last_assistant.context_limit == 128_000


async def test_custom_compaction_prompt_file(isolated: Path, fake_llm: FakeOpenAI) -> None:
    (isolated / "my-summary.txt").write_text("SUMMARISE LIKE A PIRATE")
    write_config(isolated, fake_llm, compaction={"prompt": "my-summary.txt"})
    fake_llm.script(Text("a"), Text("arr"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "q")
        await engine.compact(session.id)
    request = fake_llm.requests[1]
    assert is_summary_request(request)
    # The compaction prompt is the last message; the system prompt stays the agent's own
    # so the summary request shares the conversation's cached prefix.
    assert "\n\nSUMMARISE LIKE A PIRATE" in request["messages"][-1]["content"]
    assert "SUMMARISE" not in request["messages"][0]["content"]
