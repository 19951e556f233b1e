"""A Claude Code project works here unchanged (issue 43): the fixture of
tests/claude_project.py, trusted, in `run`, the app and ACP — its hooks fire (the jq
logger, the `rm -rf` blocker, the formatter, the Stop hook, SessionStart `compact`
after a compaction), its permission rules decide, its command fills its `!` lines, its
subagent and skill are offered, and its `.mcp.json` server's tool reaches the model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.claude_project import claude_project
from tests.conftest import write_config
from tests.engine_helpers import run_cli, tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls

pytestmark = pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")


def calls(*pairs: tuple[str, dict[str, Any]]) -> ToolCalls:
    return ToolCalls([Call(name, json.dumps(args)) for name, args in pairs])


def project(isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path) -> Path:
    """The fixture, with agent-tui.json only naming the provider (the tools' permissions
    are the defaults and Claude Code's rules)."""
    own = write_config(isolated, fake_llm)
    del own["permission"]
    (isolated / "agent-tui.json").write_text(json.dumps(own))
    # The log inside the project: the project's hooks run in the sandbox.
    return claude_project(isolated, isolated / ".hook-log.jsonl")


def turn(fake_llm: FakeOpenAI) -> None:
    """A turn that meets every hook and rule: a logged command, a blocked one, a write
    the formatter cleans, a read the rules deny, and an MCP call."""
    fake_llm.script(
        calls(("bash", {"command": "echo hello"})),
        calls(("bash", {"command": "rm -rf build"})),
        calls(("write", {"file_path": "a.py", "content": "x = 1   \n"})),
        calls(("read", {"file_path": ".env"})),
        calls(("srv_echo", {"text": "ping"})),
        Text("all done"),
    )


def check_turn(fake_llm: FakeOpenAI, isolated: Path, log: Path, first: int = 0) -> None:
    results = [tool_results(fake_llm.requests[first + i])[-1] for i in range(1, 6)]
    assert results[0].startswith("hello"), "Bash(echo:*) allowed it"
    assert "Blocked: rm -rf is not allowed here" in results[1]
    assert (isolated / "a.py").read_text() == "x = 1\n", "the formatter hook ran"
    assert "denied by config" in results[3] and "from-the-env-file" not in results[3]
    assert results[4].startswith("echo: ping"), "the .mcp.json server answered"
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    commands = [e["command"] for e in logged if "command" in e]
    assert commands == ["echo hello", "rm -rf build"]
    assert all(e["tool"] == "Bash" for e in logged if "tool" in e)
    stop = next(e for e in logged if "stop" in e)
    assert Path(stop["transcript"]).exists()
    first_request = json.dumps(fake_llm.requests[first])
    assert "Always answer in English." in first_request, "CLAUDE.md"
    assert "release-notes" in first_request, "the skill is listed"
    assert "code-reviewer: Reviews code for bugs" in first_request, "the subagent is offered"


def test_in_run(
    isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = project(isolated, fake_llm, tmp_path)
    turn(fake_llm)
    code, _, err = run_cli(capsys, "run", "do the work")
    assert code == 0, err
    check_turn(fake_llm, isolated, log)
    # The command fills its `!` line; a compaction brings SessionStart `compact`'s context.
    fake_llm.script(Text("reviewed"), Text("THE-SUMMARY"), Text("after"))
    code, _, err = run_cli(capsys, "run", "-c", "/review the tests")
    assert code == 0, err
    assert "FILES-SEEN" in json.dumps(fake_llm.requests[6]["messages"])
    assert "focusing on the tests" in json.dumps(fake_llm.requests[6]["messages"])
    assert run_cli(capsys, "compact", "-c")[0] == 0
    assert run_cli(capsys, "run", "-c", "next")[0] == 0
    after = json.dumps(fake_llm.requests[-1]["messages"])
    assert "THE-SUMMARY" in after and "Reminder: the TODO.md list is the plan" in after
    code, out, _ = run_cli(capsys, "context")
    assert "settings.json read: hooks (PreToolUse, PostToolUse, SessionStart, Stop)" in out
    assert "Claude Code's .mcp.json read" in out
    assert f"Claude Code's {isolated / '.claude' / 'commands'} read: review." in out
    assert f"Claude Code's {isolated / '.claude' / 'agents'} read: code-reviewer." in out
    assert f"Claude Code's {isolated / '.claude' / 'skills'} read: release-notes." in out


async def test_in_the_app(isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path) -> None:
    from tests.tui_helpers import open_app, type_and_send, view_text, wait_for

    log = project(isolated, fake_llm, tmp_path)
    turn(fake_llm)
    app = await open_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "do the work")
        await wait_for(pilot, lambda: "all done" in view_text(app), "the turn's end")
        fake_llm.script(Text("reviewed in the app"))
        await type_and_send(pilot, "/review the tests")
        await wait_for(pilot, lambda: "reviewed in the app" in view_text(app), "the review")
    await app.db.close()
    check_turn(fake_llm, isolated, log)
    assert "FILES-SEEN" in json.dumps(fake_llm.requests[-1]["messages"])


async def test_over_acp(isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path) -> None:
    from tests.acp_client import RecordingClient, acp_agent, prompt

    log = project(isolated, fake_llm, tmp_path)
    turn(fake_llm)
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=prompt("do the work"))
        fake_llm.script(Text("reviewed over acp"))
        await conn.prompt(session_id=session.session_id, prompt=prompt("/review the tests"))
    check_turn(fake_llm, isolated, log)
    assert "FILES-SEEN" in json.dumps(fake_llm.requests[-1]["messages"])


def test_a_skills_script_runs(
    isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project(isolated, fake_llm, tmp_path)
    fake_llm.script(
        calls(("skill", {"name": "release-notes"})),
        calls(("bash", {"command": "sh .claude/skills/release-notes/scripts/notes.sh"})),
        Text("notes written"),
    )
    code, _, err = run_cli(capsys, "run", "write the release notes")
    assert code == 0, err
    loaded = tool_results(fake_llm.requests[1])[-1]
    assert "Run scripts/notes.sh from this skill's folder" in loaded
    assert f"Skill folder: {isolated / '.claude' / 'skills' / 'release-notes'}" in loaded
    assert tool_results(fake_llm.requests[2])[-1].startswith("NOTES-FROM-THE-SKILL-SCRIPT")
