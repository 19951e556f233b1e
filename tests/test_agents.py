"""Agents defined in config and in Markdown files (project/agents.py), the bash allow-list of
plan mode, and what a custom agent's requests carry (fake server)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_tui import paths
from agent_tui.config.settings import load_config
from agent_tui.project.agents import BUILD, PLAN, load_agents, read_only_bash
from agent_tui.tool.bash_policy import command_level
from tests.conftest import write_config
from tests.engine_helpers import open_engine, text_of
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

REVIEWER = """---
description: Reviews diffs for bugs
mode: subagent
model: openai/review-model
temperature: 0.1
tools:
  bash: false
  "github_*": false
  read: true
permission:
  bash:
    "*": ask
    "git diff*": allow
---
You review code. Point at bugs with path:line.
"""


def agent_file(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def test_markdown_and_config_agents_load_with_model_and_tools(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    (isolated / "docs-prompt.txt").write_text("You write documentation.")
    write_config(
        isolated,
        fake_llm,
        agent={
            "docs": {
                "description": "Writes docs",
                "mode": "primary",
                "model": "openai/docs-model",
                "reasoning": {"effort": "low"},
                "prompt": "{file:docs-prompt.txt}",
                "tools": {"bash": False},
                "steps": 7,
            },
            "plan": {"model": "openai/plan-model"},
        },
    )
    agent_file(isolated / ".agent-tui" / "agents", "reviewer", REVIEWER)
    catalog = load_agents(load_config(), isolated)

    assert catalog.warnings == []
    reviewer = catalog.get("reviewer")
    assert reviewer is not None and reviewer.subagent and not reviewer.primary
    assert reviewer.model == "openai/review-model" and reviewer.temperature == 0.1
    assert reviewer.prompt == "You review code. Point at bugs with path:line."
    assert reviewer.tool_enabled("read", False) and not reviewer.tool_enabled("bash", True)
    assert not reviewer.tool_enabled("github_issues", True)
    assert reviewer.permission["bash"] == {"*": "ask", "git diff*": "allow"}

    docs = catalog.get("docs")
    assert docs is not None and docs.primary and docs.max_steps == 7
    assert docs.prompt == "You write documentation." and docs.model == "openai/docs-model"
    assert docs.reasoning is not None and docs.reasoning.effort == "low"
    # A built-in is changed key by key, never replaced: plan keeps its rules.
    plan = catalog.get(PLAN)
    assert plan is not None and plan.model == "openai/plan-model"
    assert plan.permission["edit"] == "deny" and plan.refusal
    assert [a.name for a in catalog.primary()] == [BUILD, PLAN, "docs"]
    assert [a.name for a in catalog.subagents()] == ["reviewer"]


def test_project_agent_file_wins_over_user_file(isolated: Path) -> None:
    agent_file(paths.config_dir() / "agents", "helper", "---\nmodel: openai/user\n---\nUser.")
    agent_file(isolated / ".agent-tui" / "agents", "helper", "---\nmodel: openai/project\n---\n")
    catalog = load_agents(load_config(), isolated)
    helper = catalog.get("helper")
    assert helper is not None and helper.model == "openai/project"
    assert helper.prompt == "User."  # the project file has no body: the user's stays


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("---\nmode: sometimes\n---\nbody", "mode"),
        ("---\ntemperature: hot\n---\nbody", "temperature"),
        ("---\nflavour: mint\n---\nbody", "flavour"),
        ("---\ntools:\n  read: true\n    bash: false\n---\n", "line 4"),
        ("---\nprompt: {file:missing.txt}\n---\n", "prompt"),
    ],
)
def test_a_malformed_agent_file_is_a_one_line_warning(
    isolated: Path, text: str, field: str
) -> None:
    path = agent_file(isolated / ".agent-tui" / "agents", "broken", text)
    agent_file(isolated / ".agent-tui" / "agents", "fine", "---\nmode: primary\n---\nFine.")
    catalog = load_agents(load_config(), isolated)
    (warning,) = catalog.warnings
    assert "\n" not in warning
    assert str(path) in warning and field in warning
    assert catalog.get("broken") is None and catalog.get("fine") is not None


@pytest.mark.parametrize(
    ("command", "level"),
    [
        ("ls -la", "allow"),
        ("git status --short", "allow"),
        ("git log --oneline | head -5", "allow"),
        ("rg TODO src 2>/dev/null", "allow"),
        ("find . -name '*.py'", "allow"),
        ("find . -name '*.pyc' -delete", "deny"),
        ("find . -exec rm {} +", "deny"),
        ("ls > files.txt", "deny"),
        ("cat a | tee b", "deny"),
        ("ls; rm -rf build", "deny"),
        ("ls && git commit -m x", "deny"),
        ("echo $(rm x)", "deny"),
        ("(cd src && ls)", "deny"),
        ("ls\nrm x", "deny"),
        ("git push", "deny"),
        ("sort -o out.txt in.txt", "deny"),
    ],
)
def test_the_plan_agent_bash_allow_list(command: str, level: str) -> None:
    assert command_level(read_only_bash(), command, "ask")[0] == level


async def test_a_custom_primary_agent_sends_its_prompt_model_and_tools(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(
        isolated,
        fake_llm,
        agent={"docs": {"mode": "primary", "model": "openai/docs-model", "temperature": 0.3}},
    )
    agent_file(
        isolated / ".agent-tui" / "agents",
        "docs",
        "---\ntools:\n  bash: false\n  write: false\n---\nYou write documentation only.",
    )
    fake_llm.script(
        ToolCalls([Call("bash", json.dumps({"command": "ls"}))]),
        Text("Docs agent here."),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "document app.py", agent="docs")
        messages = await engine.ctx.db.all_messages(session.id)

    first = fake_llm.requests[0]
    assert first["model"] == "docs-model" and first["temperature"] == 0.3
    # One system message (text-only content goes as a string): the agent's prompt first.
    assert [m["role"] for m in first["messages"]].count("system") == 1
    assert text_of(first["messages"][0]).startswith("You write documentation only.\n\n<env>")
    names = {t["function"]["name"] for t in first["tools"]}
    assert "bash" not in names and "write" not in names and "read" in names
    assert "plan_exit" not in names
    # bash is not its tool: the call is refused as unknown, nothing runs.
    tool = next(p for m in messages for p in m.parts if p.type == "tool")
    assert tool.state.status == "error" and "Unknown tool" in tool.state.error  # type: ignore[union-attr]
    assert messages[0].info.model == "openai/docs-model"


async def test_the_task_tool_lists_subagents_by_description(
    isolated: Path, configured: FakeOpenAI
) -> None:
    agent_file(isolated / ".agent-tui" / "agents", "reviewer", REVIEWER)
    configured.script(Text("ok"))
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "hi")
    (task,) = [t for t in configured.requests[0]["tools"] if t["function"]["name"] == "task"]
    assert "- reviewer: Reviews diffs for bugs" in task["function"]["description"]
