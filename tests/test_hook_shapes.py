"""Every hook input agent-tui sends has the shape Claude Code 2.1.197 sends (issue 51):
the same turn — a slash command, then a bash the person is asked about, read, edit,
write, two greps, glob, bash, a bash that fails, a missing file and a subagent that runs
bash — in each front-end: `run`, the app (Pilot) and the ACP agent as a process, driven
by the ACP SDK's client. Each event a logging hook received is compared with Claude Code's
recorded event of the same kind (tests/hook_shapes.py); an event agent-tui starts to fire
is compared as soon as it does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.conftest import person_config, write_config
from tests.engine_helpers import run_cli
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls
from tests.hook_shapes import (
    Key,
    compare_with_recorded,
    differences,
    exemptions_not_in_wiring,
)
from tests.test_hook_contract import events, logging_hook

PROMPT = "/run-tests core"
AGENT = """---
name: reviewer
description: >
  Reviews code for problems.
  Use it after every edit.
tools: Bash, Read
---
You review code and answer in one line.
"""
ASKED = "touch asked.txt"
"""The one command the person is asked about (`run`, with nobody to ask, refuses it)."""
HOOKS_TIMEOUT = 60.0
"""Seconds the app's turn may take: a hook process starts for every event of it."""
COMPARED_EVERYWHERE = {
    *{
        (event, tool, False)
        for event in ("PreToolUse", "PostToolUse")
        for tool in ("Read", "Edit", "Write", "Grep", "Glob", "Bash", "Agent")
    },
    ("PostToolUseFailure", "Bash", False),
    ("PostToolUseFailure", "Read", False),
    ("PermissionRequest", "Bash", False),
    ("PreToolUse", "Bash", True),
    ("PostToolUse", "Bash", True),
    ("SubagentStart", "", True),
    ("SubagentStop", "", True),
    ("PostToolBatch", "", False),
    ("PostToolBatch", "", True),
    ("InstructionsLoaded", "", False),
    ("SessionStart", "", False),
    ("UserPromptExpansion", "", False),
    ("UserPromptSubmit", "", False),
    ("MessageDisplay", "", False),
    ("Stop", "", False),
    ("SessionEnd", "", False),
}
"""The kinds of event each front-end's turn fires that Claude Code's recording has."""
ASKING = frozenset({("Notification", "", False)})
"""Where someone answers the question (the app, an editor): the person is notified."""


def call(tool: str, call_id: str, **arguments: Any) -> Call:
    return Call(tool, json.dumps(arguments), id=call_id)


def prepare(project: Path, server: FakeOpenAI, log: Path) -> None:
    """The project, a logging hook on every event agent-tui fires, and the model's turn."""
    from agent_tui.config.hook_config import FIRED

    bash = {"*": "allow", ASKED: "ask"}
    write_config(project, server, permission={"bash": bash, "edit": "allow", "write": "allow"})
    person_config({"hooks": {event: [logging_hook(log)] for event in FIRED}})
    for folder in ("src", ".claude/commands", ".claude/agents"):
        (project / folder).mkdir(parents=True)
    (project / "src" / "app.py").write_text("def main():\n    return 'hello'\n")
    (project / "CLAUDE.md").write_text("# Project\n\nKeep functions short.\n")
    (project / ".claude" / "commands" / "run-tests.md").write_text(
        "Run the tests for the module $ARGUMENTS and report.\n"
    )
    (project / ".claude" / "agents" / "reviewer.md").write_text(AGENT)
    work = [
        call("bash", "c0", command=ASKED, description="Make a file"),
        call("read", "c1", file_path="src/app.py"),
        call("edit", "c2", file_path="src/app.py", old_string="hello", new_string="hi"),
        call("write", "c3", file_path="src/new.py", content="x = 1\n"),
        call("grep", "c4", pattern="def ", path="src"),
        call("grep", "c5", pattern="return"),
        call("glob", "c6", pattern="**/*.py"),
        call("bash", "c7", command="echo hi", description="Print hi"),
        call("bash", "c8", command="echo oops; exit 3", description="Fail on purpose"),
        call("read", "c9", file_path="missing.txt"),
        call("task", "c10", description="Review", prompt="Review src.", agent="reviewer"),
    ]
    server.script(
        ToolCalls(work),
        ToolCalls([call("bash", "s1", command="echo from-subagent", description="Say it")]),
        Text("Review done: no issues."),
        Text("done"),
    )


def assert_claude_codes_shapes(log: Path, also: frozenset[Key] = frozenset()) -> None:
    """Every event in `log` has Claude Code's shape; those of the turn were all sent
    (`also`: kinds this front-end sends besides)."""
    sent = events(log)
    comparison = compare_with_recorded(sent)
    assert not comparison.problems, "\n".join(comparison.problems)
    expected = COMPARED_EVERYWHERE | also
    assert expected <= comparison.compared, f"not sent: {expected - comparison.compared}"
    submit = next(e for e in sent if e["hook_event_name"] == "UserPromptSubmit")
    assert submit["prompt"] == PROMPT, "as typed"


def stopped(log: Path) -> bool:
    """The Stop hook has logged (read as text: another hook may be writing its line)."""
    return log.exists() and '"hook_event_name": "Stop"' in log.read_text()


def test_run(
    isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    prepare(isolated, fake_llm, log)
    code, _, err = run_cli(capsys, "run", PROMPT)
    assert code == 0, err
    assert_claude_codes_shapes(log)


async def test_the_app(isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path) -> None:
    from agent_tui.tui.permission_screen import PermissionScreen
    from tests.tui_helpers import open_app, type_and_send, wait_for

    log = tmp_path / "events.jsonl"
    prepare(isolated, fake_llm, log)
    app = await open_app()
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await app.loaded.wait()
            await type_and_send(pilot, PROMPT)
            asked = lambda: isinstance(app.screen, PermissionScreen)  # noqa: E731
            await wait_for(pilot, asked, "the question", timeout=HOOKS_TIMEOUT)
            await pilot.press("a")  # allow once
            await wait_for(pilot, lambda: stopped(log), "Stop", timeout=HOOKS_TIMEOUT)
        await app.engine.close("prompt_input_exit")  # as the app's launch does on quit
    finally:
        await app.db.close()
    assert_claude_codes_shapes(log, also=ASKING)


async def test_the_acp_agent(isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    prepare(isolated, fake_llm, log)
    client = RecordingClient()
    async with acp_agent(client, isolated, fs=True, subprocess=True) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=prompt(PROMPT))
    assert response.stop_reason == "end_turn"
    assert [tool_call.title for _, tool_call, _ in client.permissions] == [ASKED]
    assert_claude_codes_shapes(log, also=ASKING)


def test_every_exempted_field_is_in_wirings_table_of_differences() -> None:
    assert not exemptions_not_in_wiring()


def test_the_comparison_sees_shapes_not_values() -> None:
    theirs = {
        "cwd": "/p",
        "n": 1,
        "ok": True,
        "effort": {"level": "high"},
        "tool_response": {"file": {"numLines": 2}, "hunks": [{"lines": ["+a"]}]},
        "suggestions": [{"type": "addDirectories", "directories": ["/p"]}],
    }
    alike = {
        "cwd": "/elsewhere",
        "n": 2.5,
        "ok": False,
        "extra": None,
        "tool_response": {"file": {"numLines": 7}, "hunks": [{"lines": []}]},
        "suggestions": [{"type": "addRules", "rules": []}],
    }
    assert differences(theirs, alike) == [], "values, extra fields, another variant"
    unlike = {
        "cwd": None,
        "ok": 1,
        "effort": {"level": "low"},
        "tool_response": {"file": {}, "hunks": [["+a"]]},
        "suggestions": [],
    }
    assert differences(theirs, unlike) == [
        "cwd is null, Claude Code's is string",
        "n is missing",
        "ok is number, Claude Code's is bool",
        "effort is exempted but sent: drop the exemption if it always is",
        "tool_response.file.numLines is missing",
        "tool_response.hunks[] is array, Claude Code's is object",
    ]
