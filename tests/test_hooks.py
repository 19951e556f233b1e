"""Hooks (agent_tui/hooks/) with real scripts: a Python script that logs the event it got
on stdin and answers as told (exit 2 with a reason, JSON context, plain stdout, a hang).
Hooks go in the person's own config unless a test is about a project's hooks."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from agent_tui import paths
from agent_tui.records import TextPart, UserMessage
from agent_tui.trust import store
from agent_tui.tui.confirm_screen import ConfirmScreen
from tests.acp_client import RecordingClient, acp_agent, prompt
from tests.conftest import SMALL, cloned_project, person_config, write_config
from tests.engine_helpers import is_summary_request, open_engine, run_cli, text_of, tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage
from tests.tui_helpers import ask, close, open_app, wait_for

SCRIPT = """
import json, pathlib, sys, time
event = json.load(sys.stdin)
log, mode = pathlib.Path(sys.argv[1]), sys.argv[2]
with log.open("a") as out:
    out.write(json.dumps(event) + "\\n")
if mode == "block":
    print("REASON: not in this repository", file=sys.stderr)
    sys.exit(2)
if mode == "block-once" and not event.get("stop_hook_active"):
    print("run the tests first", file=sys.stderr)
    sys.exit(2)
if mode == "context":
    name = event["hook_event_name"]
    specific = {"hookEventName": name, "additionalContext": f"CONTEXT-FROM-{name}"}
    print(json.dumps({"hookSpecificOutput": specific}))
if mode == "plain":
    print("PLAIN-CONTEXT-7")
if mode == "hang":
    time.sleep(60)
if mode == "fail":
    print("broken script", file=sys.stderr)
    sys.exit(1)
"""


class Hook:
    """The script, its log, and the config entries that run it."""

    def __init__(self, root: Path) -> None:
        self.script = root / "hook.py"
        self.script.write_text(SCRIPT, encoding="utf-8")
        # Inside the project: a project's hooks run in the sandbox, where only the
        # project (and its temp dir) can be written.
        self.log = root / "project" / ".hook-events.jsonl"

    def command(self, mode: str = "ok") -> str:
        return f"{sys.executable} {self.script} {self.log} {mode}"

    def entry(self, mode: str = "ok", matcher: str = "", timeout: float | None = None) -> dict:
        hook: dict[str, Any] = {"type": "command", "command": self.command(mode)}
        if timeout is not None:
            hook["timeout"] = timeout
        return {"matcher": matcher, "hooks": [hook]}

    def events(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def names(self) -> list[str]:
        return [event["hook_event_name"] for event in self.events()]


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    return Hook(tmp_path)


def own_config(hooks: dict[str, list[dict]], **more: Any) -> None:
    """The person's own config file (hooks there run without asking)."""
    person_config({"hooks": hooks, **more})


async def stored_messages() -> int:
    async with open_engine() as engine:
        sessions = await engine.ctx.db.list_sessions()
        return sum([len(await engine.ctx.db.all_messages(s.id)) for s in sessions])


def bash(command: str) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))])


def test_pre_tool_use_exit_2_blocks_bash_and_the_model_reads_why(
    configured: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    own_config({"PreToolUse": [hook.entry("block", matcher="Bash")]})
    marker = Path.cwd() / "ran.txt"
    configured.script(bash(f"touch {marker}"), Text("understood"))
    code, _, err = run_cli(capsys, "run", "make the file")
    assert code == 0, err
    assert not marker.exists(), "the blocked call was not run"
    reason = tool_results(configured.requests[1])[-1]
    assert "PreToolUse hook blocked this bash call" in reason
    assert "REASON: not in this repository" in reason
    (event,) = hook.events()
    assert event["hook_event_name"] == "PreToolUse"
    assert event["tool_name"] == "Bash", "Claude Code's name, as the matcher used it"
    assert event["tool_input"] == {"command": f"touch {marker}"}
    assert event["cwd"] == str(Path.cwd()) and event["session_id"].startswith("ses_")


def test_post_tool_use_context_reaches_the_model_and_other_tools_do_not_match(
    configured: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    own_config({"PostToolUse": [hook.entry("context", matcher="bash|Write")]})
    (Path.cwd() / "notes.txt").write_text("hello\n")
    configured.script(
        bash("echo from-bash"),
        ToolCalls([Call("read", json.dumps({"file_path": "notes.txt"}))]),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "look")
    assert code == 0, err
    after_bash = tool_results(configured.requests[1])[-1]
    assert "from-bash" in after_bash and "CONTEXT-FROM-PostToolUse" in after_bash
    assert "CONTEXT-FROM" not in tool_results(configured.requests[2])[-1], "read did not match"
    (event,) = hook.events()
    assert event["tool_name"] == "Bash", "Claude Code's name, whichever the matcher used"
    assert "from-bash" in event["tool_response"]["stdout"]


def test_user_prompt_submit_blocks_a_prompt_and_nothing_is_saved(
    configured: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    own_config({"UserPromptSubmit": [hook.entry("block")]})
    code, out, err = run_cli(capsys, "run", "delete everything")
    assert code == 0, "Claude Code's -p says why and exits 0"
    assert "UserPromptSubmit hook blocked the prompt: REASON: not in this repository" in out
    assert "Traceback" not in err
    assert configured.requests == []
    assert asyncio.run(stored_messages()) == 0
    assert hook.events()[0]["prompt"] == "delete everything"


def test_prompt_and_session_start_context_reach_the_model(
    configured: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    own_config(
        {
            "UserPromptSubmit": [hook.entry("plain")],
            "SessionStart": [hook.entry("context", matcher="startup")],
        }
    )
    configured.script(Text("hi"))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    sent = json.dumps(configured.requests[0]["messages"])
    assert "PLAIN-CONTEXT-7" in sent and "CONTEXT-FROM-SessionStart" in sent
    assert hook.names() == ["SessionStart", "UserPromptSubmit"]
    assert hook.events()[0]["source"] == "startup"


async def test_pre_and_post_compact_fire_around_manual_and_automatic_compactions(
    isolated: Path, fake_llm: FakeOpenAI, hook: Hook
) -> None:
    write_config(isolated, fake_llm, models=SMALL)
    own_config(
        {"PreCompact": [hook.entry("ok")], "PostCompact": [hook.entry("context", matcher="")]}
    )
    fake_llm.script(
        Text("first answer"),
        Text("MANUAL-SUMMARY"),
        # Over usable (8,000) after this step: compacts before the next call.
        ToolCalls([Call("bash", json.dumps({"command": "echo one"}))], usage=Usage(8_500, 100)),
        Text("AUTO-SUMMARY"),
        Text("after the automatic one"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "first question")
        result = await engine.compact(session.id, "keep the numbers")
        assert result is not None and result.outcome == "stop"
        result = await engine.prompt(session.id, "second question")
        assert result is not None and result.outcome == "stop", result
    compacts = [e for e in hook.events() if e["hook_event_name"].endswith("Compact")]
    assert [(e["hook_event_name"], e["trigger"]) for e in compacts] == [
        ("PreCompact", "manual"),
        ("PostCompact", "manual"),
        ("PreCompact", "auto"),
        ("PostCompact", "auto"),
    ]
    assert compacts[0]["custom_instructions"] == "keep the numbers"
    assert compacts[1]["summary"] == "MANUAL-SUMMARY"
    assert compacts[3]["summary"] == "AUTO-SUMMARY"
    # PostCompact's context is restated after the summary from the next request on.
    after_manual = fake_llm.requests[2]
    assert "MANUAL-SUMMARY" in json.dumps(after_manual["messages"])
    assert "CONTEXT-FROM-PostCompact" in json.dumps(after_manual["messages"])
    last = fake_llm.requests[-1]
    assert not is_summary_request(last)
    assert "AUTO-SUMMARY" in json.dumps(last["messages"])
    assert "CONTEXT-FROM-PostCompact" in json.dumps(last["messages"])


def test_pre_compact_exit_2_stops_a_manual_compaction(
    configured: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    own_config({"PreCompact": [hook.entry("block", matcher="manual")]})
    configured.script(Text("answer"))
    assert run_cli(capsys, "run", "question")[0] == 0
    code, _, err = run_cli(capsys, "compact", "--continue")
    assert code != 0 and "PreCompact hook stopped the compaction" in err
    assert len(configured.requests) == 1, "no summariser call"


def test_a_claude_code_settings_block_copied_as_is_works(
    configured: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Edit|MultiEdit|Write",
                    "hooks": [{"type": "command", "command": hook.command("block"), "timeout": 30}],
                }
            ],
            "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": "true"}]}],
        }
    }
    own_config(settings["hooks"])
    target = Path.cwd() / "new.txt"
    write = Call("write", json.dumps({"file_path": str(target), "content": "x"}))
    configured.script(ToolCalls([write]), bash("echo fine"), Text("ok"))
    code, _, err = run_cli(capsys, "run", "write it")
    assert code == 0, err
    assert not target.exists()
    assert "PreToolUse hook blocked this write call" in tool_results(configured.requests[1])[-1]
    assert "fine" in tool_results(configured.requests[2])[-1], "bash does not match Edit|Write"
    assert [e["tool_name"] for e in hook.events()] == ["Write"]


def test_a_project_hook_runs_only_once_the_project_is_trusted(
    isolated: Path, fake_llm: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    cloned_project(isolated, fake_llm, hooks={"UserPromptSubmit": [hook.entry("ok")]})
    fake_llm.script(Text("one"), Text("two"), Text("three"))
    code, _, err = run_cli(capsys, "run", "first")
    assert code == 0, err
    assert hook.events() == [], "an untrusted project's hook did not run"
    assert "This project is not trusted: its hooks settings are left out" in err
    assert "agent-tui run --trust" in err
    code, _, err = run_cli(capsys, "run", "--trust", "second")
    assert code == 0, err
    assert [e["prompt"] for e in hook.events()] == ["second"]
    code, _, err = run_cli(capsys, "run", "third")  # trusted from now on
    assert [e["prompt"] for e in hook.events()] == ["second", "third"]
    # Changed hooks are asked about again.
    cloned_project(isolated, fake_llm, hooks={"UserPromptSubmit": [hook.entry("plain")]})
    fake_llm.script(Text("four"))
    code, _, err = run_cli(capsys, "run", "fourth")
    assert len(hook.events()) == 2
    assert "not trusted (changed since you trusted it)" in err
    # A project cannot trust itself; the person's own config can.
    cloned_project(
        isolated,
        fake_llm,
        hooks={"UserPromptSubmit": [hook.entry("context")]},
        trust_project_hooks=True,
        trusted_projects=[str(isolated)],
    )
    fake_llm.script(Text("five"), Text("six"))
    run_cli(capsys, "run", "fifth")
    assert len(hook.events()) == 2
    own_config({}, trust_project_hooks=True, trusted_projects=[], **_provider_of(isolated))
    run_cli(capsys, "run", "sixth")
    assert [e["prompt"] for e in hook.events()][-1] == "sixth"


def _provider_of(project: Path) -> dict[str, Any]:
    """The person's own config as `cloned_project` wrote it, minus hooks and trust."""
    written = json.loads((paths.config_dir() / "config.json").read_text())
    return {k: v for k, v in written.items() if k not in ("hooks", "trusted_projects")}


def test_a_hook_past_its_timeout_and_a_failing_hook_are_warnings_and_the_turn_goes_on(
    configured: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    own_config(
        {
            "PreToolUse": [hook.entry("hang", timeout=1)],
            "PostToolUse": [hook.entry("fail")],
        }
    )
    configured.script(bash("echo still-ran"), Text("ok"))
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert "still-ran" in tool_results(configured.requests[1])[-1]
    assert "Hook PreToolUse" in err and "timed out after 1 s; going on." in err
    assert "Hook PostToolUse" in err and "failed (exit 1): broken script" in err


async def test_a_stop_hook_that_blocks_makes_the_agent_go_on_once(
    configured: FakeOpenAI, hook: Hook
) -> None:
    own_config({"Stop": [hook.entry("block-once")]})
    configured.script(Text("I am done"), Text("Tests pass now"))
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        result = await engine.prompt(session.id, "fix it")
        assert result is not None and result.outcome == "stop"
        history = await engine.ctx.db.all_messages(session.id)
    assert len(configured.requests) == 2
    assert "A Stop hook asks you to continue: run the tests first" in json.dumps(
        configured.requests[1]["messages"]
    )
    users = [m for m in history if isinstance(m.info, UserMessage)]
    assert len(users) == 2
    assert any(isinstance(p, TextPart) and "run the tests first" in p.text for p in users[1].parts)
    assert [e["stop_hook_active"] for e in hook.events()] == [False, True]
    assert text_of(configured.requests[1]["messages"][-1]).startswith("A Stop hook")


async def test_a_message_sent_while_the_stop_hooks_run_is_answered_in_that_turn(
    configured: FakeOpenAI, tmp_path: Path
) -> None:
    """The turn has answered; its Stop hook is still running when the person sends the
    next message (the app queues it into the busy session). The loop reads it before it
    ends, instead of leaving it saved and never answered."""
    started, go = tmp_path / "stop-started", tmp_path / "go"
    gate = f"touch {started}; while [ ! -e {go} ]; do sleep 0.01; done"
    own_config({"Stop": [{"hooks": [{"type": "command", "command": gate}]}]})
    configured.script(Text("first answer"), Text("second answer"))
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        first = asyncio.create_task(engine.prompt(session.id, "first"))
        await asyncio.to_thread(wait_for_path, started)
        assert engine.is_busy(session.id)
        assert await engine.prompt(session.id, "second") is None, "queued into the turn"
        go.touch()
        result = await asyncio.wait_for(first, 60)
        assert not engine.is_busy(session.id)
    assert result is not None and result.outcome == "stop"
    assert len(configured.requests) == 2, "the second message was answered"
    assert text_of(configured.requests[1]["messages"][-1]) == "second"


def wait_for_path(path: Path) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)


async def test_acp_fires_the_same_hooks(configured: FakeOpenAI, hook: Hook, isolated: Path) -> None:
    own_config(
        {
            "PreToolUse": [hook.entry("block", matcher="Bash")],
            "UserPromptSubmit": [hook.entry("plain")],
        }
    )
    configured.script(bash("rm -rf build"), Text("I will not."))
    client = RecordingClient()
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=prompt("clean up"))
    assert response.stop_reason == "end_turn"
    assert hook.names() == ["UserPromptSubmit", "PreToolUse"]
    assert "PLAIN-CONTEXT-7" in json.dumps(configured.requests[0]["messages"])
    assert "REASON: not in this repository" in tool_results(configured.requests[1])[-1]
    (update,) = [
        u for u in client.of(session.session_id, "tool_call_update") if u.status == "failed"
    ]
    assert "PreToolUse hook blocked" in json.dumps(update.model_dump(mode="json"))


async def test_the_app_asks_to_trust_a_projects_hooks_then_fires_them(
    isolated: Path, fake_llm: FakeOpenAI, hook: Hook
) -> None:
    cloned_project(isolated, fake_llm, hooks={"PreToolUse": [hook.entry("block", matcher="bash")]})
    fake_llm.script(bash("echo hi"), Text("blocked, fine"))
    app = await open_app()
    async with app.run_test(size=(100, 40)) as pilot:
        asking = lambda: isinstance(app.screen, ConfirmScreen) and app.screen.query("#detail")  # noqa: E731
        await wait_for(pilot, asking, "the trust question")
        detail = str(app.screen.query_one("#detail", Static).render())
        assert "in the sandbox" in detail and "PreToolUse" in detail
        await pilot.press("y")
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen))
        await ask(pilot, fake_llm, "say hi")
        await wait_for(pilot, lambda: len(fake_llm.requests) == 2, "the second request")
        await wait_for(pilot, lambda: app.chat.status == "idle")
    await close(app)
    assert "REASON: not in this repository" in tool_results(fake_llm.requests[1])[-1]
    assert hook.names() == ["PreToolUse"]
    # Trusted once: the next launch does not ask again.
    app = await open_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await app.loaded.wait()
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmScreen)
    await close(app)


def test_context_lists_the_hooks_and_says_where_they_run(
    isolated: Path, fake_llm: FakeOpenAI, hook: Hook, capsys: pytest.CaptureFixture[str]
) -> None:
    cloned_project(isolated, fake_llm, hooks={"Stop": [hook.entry("ok")]})
    own_config(
        {"PreToolUse": [hook.entry("ok"), hook.entry("fail")], "Setup": []},
        **_provider_of(isolated),
        trusted_projects=[],
    )
    fake_llm.script(Text("hi"))
    assert run_cli(capsys, "run", "hello")[0] == 0
    code, out, err = run_cli(capsys, "context")
    assert code == 0, err
    assert "Hooks (yours run outside the sandbox, a project's inside it):" in out
    assert "PreToolUse: 2 commands" in out
    assert "Setup: 0 commands (not an event agent-tui fires)" in out
    project = isolated / "agent-tui.json"
    assert f"{project} (the project's: in the sandbox) - NOT RUN until trusted" in out
    assert "config.json (yours: outside)" in out


def test_a_pre_tool_use_allow_answers_the_permission_question_but_not_a_deny(
    isolated: Path, fake_llm: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    command = f"echo '{json.dumps(allow)}'"
    entry = {"matcher": "bash|write", "hooks": [{"type": "command", "command": command}]}
    write_config(isolated, fake_llm, permission={"bash": "ask", "write": "deny"})
    own_config({"PreToolUse": [entry]})
    target = isolated / "w.txt"
    fake_llm.script(
        bash("echo approved-by-hook"),
        ToolCalls([Call("write", json.dumps({"file_path": str(target), "content": "x"}))]),
        Text("ok"),
    )
    code, _, err = run_cli(capsys, "run", "go")  # headless: nobody to ask
    assert code == 0, err
    assert "approved-by-hook" in tool_results(fake_llm.requests[1])[-1]
    assert "denied by config" in tool_results(fake_llm.requests[2])[-1]
    assert not target.exists()


@pytest.mark.parametrize("answer", ["allow_always", "allow_once", "reject_once"])
async def test_an_acp_client_is_asked_whether_a_projects_hooks_may_run(
    isolated: Path, fake_llm: FakeOpenAI, hook: Hook, answer: str
) -> None:
    cloned_project(isolated, fake_llm, hooks={"UserPromptSubmit": [hook.entry("ok")]})
    fake_llm.script(Text("one"), Text("two"))
    client = RecordingClient(answer=lambda call, options: answer)
    async with acp_agent(client, isolated) as (conn, _):
        session = await conn.new_session(cwd=str(isolated), mcp_servers=[])
        sid = session.session_id
        await conn.prompt(session_id=sid, prompt=prompt("first"))
        await conn.prompt(session_id=sid, prompt=prompt("second"))
    (asked,) = client.permissions
    assert "Trust this project" in json.dumps(asked[1].model_dump(mode="json"))
    ran = [e["prompt"] for e in hook.events()]
    remembered = str(isolated.resolve()) in store.recorded()
    if answer == "reject_once":
        assert ran == [] and not remembered
    else:
        assert ran == ["first", "second"]
        assert remembered == (answer == "allow_always")


async def test_the_app_shows_why_a_prompt_was_blocked_and_keeps_what_was_typed(
    configured: FakeOpenAI, hook: Hook
) -> None:
    own_config({"UserPromptSubmit": [hook.entry("block")]})
    app = await open_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await app.loaded.wait()
        app.prompt.focus()
        app.prompt.load_text("drop the tables")
        await pilot.press("enter")
        said = lambda: " ".join(str(n.message) for n in app._notifications)  # noqa: E731
        await wait_for(pilot, lambda: "REASON: not in this repository" in said(), "the notice")
        assert "UserPromptSubmit hook blocked the prompt" in said()
        assert app.prompt.text == "drop the tables"
    await close(app)
    assert configured.requests == []
    assert [e["prompt"] for e in hook.events()] == ["drop the tables"]
