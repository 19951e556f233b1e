"""The Claude Code 2.1 events agent-tui fires besides the first ones (issue 51): each with
the real `run` CLI against the fake OpenAI server and real hook scripts, its payload's
fields and values as Claude Code 2.1.197 sends them (tests/fixtures/claude_code_hooks),
and each decision a hook can make: UserPromptExpansion (a typed custom command, blocked
before any of its `!` lines runs), PostToolBatch (context after the step's results, or a
stop), StopFailure (a provider error ends the turn), TaskCreated / TaskCompleted (the
todo list), MessageDisplay (the step's text, whole)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import person_config
from tests.engine_helpers import run_cli, tool_results
from tests.fake_openai import Call, Error, FakeOpenAI, Text, ToolCalls
from tests.hook_shapes import RECORDED
from tests.test_hook_contract import UUID, call, events, logging_hook


def recorded_keys(name: str) -> set[str]:
    """The fields Claude Code 2.1.197 sent for a fixture, less what agent-tui never sends
    (`effort`, docs/wiring.md's table)."""
    data = json.loads((RECORDED / f"{name}.json").read_text())["input"]
    return set(data) - {"effort"}


def blocking_hook(reason: str, matcher: str = "") -> dict[str, Any]:
    """A hook that exits 2 with `reason` on stderr."""
    command = f"cat > /dev/null; echo '{reason}' >&2; exit 2"
    return {"matcher": matcher, "hooks": [{"type": "command", "command": command}]}


def script_hook(tmp_path: Path, name: str, body: str) -> dict[str, Any]:
    """A Python hook: `event` is the input; `body` decides."""
    script = tmp_path / f"{name}.py"
    script.write_text(f"import json, sys\nevent = json.load(sys.stdin)\n{body}\n")
    return {"hooks": [{"type": "command", "command": f"{sys.executable} {script}"}]}


def custom_command(folder: Path, name: str, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(body)


# ---- UserPromptExpansion ---------------------------------------------------------------


def test_a_typed_command_fires_user_prompt_expansion_before_submit(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Path.cwd()
    custom_command(project / ".claude" / "commands", "run-tests", "Test $ARGUMENTS: !`echo ok`")
    user_commands = Path(os.environ["AGENT_TUI_CONFIG_DIR"]) / "commands"
    custom_command(user_commands, "mine", "Mine: $ARGUMENTS")
    log = tmp_path / "events.jsonl"
    context = {"hookSpecificOutput": {"additionalContext": "EXPANSION-CTX"}}
    person_config(
        {
            "hooks": {
                "UserPromptExpansion": [
                    logging_hook(log, context, matcher="run-tests"),
                    logging_hook(log, matcher="mine"),
                ],
                "UserPromptSubmit": [logging_hook(log)],
            }
        }
    )
    configured.script(Text("ran"), Text("mine too"))
    assert run_cli(capsys, "run", "/run-tests core")[0] == 0
    assert run_cli(capsys, "run", "/mine a b")[0] == 0
    expansion, submit, mine, _ = events(log)
    assert expansion["hook_event_name"] == "UserPromptExpansion"
    assert set(expansion) - {"env"} == recorded_keys("UserPromptExpansion.slash_command")
    assert expansion["expansion_type"] == "slash_command"
    assert (expansion["command_name"], expansion["command_args"]) == ("run-tests", "core")
    assert expansion["command_source"] == "projectSettings"
    assert expansion["prompt"] == submit["prompt"] == "/run-tests core"
    assert UUID.match(expansion["prompt_id"]) and expansion["prompt_id"] == submit["prompt_id"]
    assert expansion["session_id"] == submit["session_id"]
    assert (mine["command_name"], mine["command_args"]) == ("mine", "a b")
    assert mine["command_source"] == "userSettings", "the person's own commands folder"
    first = json.dumps(configured.requests[0]["messages"])
    assert "Test core: ok" in first, "its `!` line ran after the hook"
    assert first.count("EXPANSION-CTX") == 1
    assert "EXPANSION-CTX" not in json.dumps(configured.requests[1]["messages"])


@pytest.mark.parametrize("how", ["exit 2", "decision"])
def test_an_expansion_hook_that_blocks_stops_the_command_before_its_lines_run(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    project = Path.cwd()
    custom_command(project / ".claude" / "commands", "deploy", "Deploy: !`touch deployed.txt`")
    log = tmp_path / "events.jsonl"
    hook = (
        blocking_hook("no deploys on Friday", matcher="deploy")
        if how == "exit 2"
        else logging_hook(log, {"decision": "block", "reason": "no deploys on Friday"})
    )
    person_config(
        {"hooks": {"UserPromptExpansion": [hook], "UserPromptSubmit": [logging_hook(log)]}}
    )
    code, out, _ = run_cli(capsys, "run", "/deploy prod")
    assert code == 0, "as claude -p: it says why"
    assert "A UserPromptExpansion hook blocked /deploy: no deploys on Friday" in out
    assert not (project / "deployed.txt").exists(), "its `!` line never ran"
    assert configured.requests == [] and events(log, "UserPromptSubmit") == []
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0 and json.loads(out) == [], "the session made for it is not kept"


# ---- PostToolBatch ---------------------------------------------------------------------


def test_post_tool_batch_fires_once_with_every_call_and_its_context_follows_them(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    context = {"hookSpecificOutput": {"additionalContext": "BATCH-CTX"}}
    person_config({"hooks": {"PostToolBatch": [logging_hook(log, context)]}})
    (Path.cwd() / "notes.txt").write_text("one\ntwo\n")
    step = ToolCalls(
        [
            Call("read", json.dumps({"file_path": "notes.txt"}), id="c_read"),
            Call("read", json.dumps({"file_path": "missing.txt"}), id="c_missing"),
            Call("bash", json.dumps({"command": "echo hi"}), id="c_bash"),
        ]
    )
    configured.script(step, Text("done"))
    code, _, err = run_cli(capsys, "run", "look")
    assert code == 0, err
    (batch,) = events(log)
    assert set(batch) - {"env"} == recorded_keys("PostToolBatch")
    calls = batch["tool_calls"]
    assert [c["tool_name"] for c in calls] == ["Read", "Read", "Bash"]
    assert [c["tool_use_id"] for c in calls] == ["c_read", "c_missing", "c_bash"]
    assert calls[0]["tool_input"] == {"file_path": str(Path.cwd() / "notes.txt")}
    assert calls[2]["tool_input"] == {"command": "echo hi"}
    results = tool_results(configured.requests[1])
    assert all(isinstance(c["tool_response"], str) for c in calls)
    assert [c["tool_response"] for c in calls[:2]] == results[:2], "what the model read"
    assert "File not found" in calls[1]["tool_response"], "a failed call too"
    assert results[2] == f"{calls[2]['tool_response']}\n\n[PostToolBatch hook] BATCH-CTX"
    assert json.dumps(configured.requests[1]["messages"]).count("BATCH-CTX") == 1


@pytest.mark.parametrize("how", ["exit 2", "decision", "continue"])
def test_a_post_tool_batch_hook_stops_the_loop_before_the_next_request(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    answers: dict[str, Any] = {
        "decision": {"decision": "block", "reason": "enough for now"},
        "continue": {"continue": False, "stopReason": "enough for now"},
    }
    hook = (
        blocking_hook("enough for now")
        if how == "exit 2"
        else logging_hook(tmp_path / "events.jsonl", answers[how])
    )
    person_config({"hooks": {"PostToolBatch": [hook]}})
    configured.script(call("bash", command="echo hi"), Text("next"))
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert len(configured.requests) == 1, "no request after the batch"
    assert "A hook stopped the agent: enough for now" in err
    assert run_cli(capsys, "run", "-c", "why?")[0] == 0
    (result,) = tool_results(configured.requests[1])
    assert "[PostToolBatch hook] The agent was stopped: enough for now" in result


# ---- StopFailure -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("errors", "expected"),
    [
        ([Error(400, "fixture: the request is refused")], "unknown"),
        ([Error(401, "Incorrect API key provided")], "authentication_failed"),
        ([Error(429, "slow down")] * 5, "rate_limit"),
        ([Error(500, "it broke")] * 5, "server_error"),
    ],
)
def test_a_provider_error_fires_stop_failure_instead_of_stop(
    configured: FakeOpenAI,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    errors: list[Error],
    expected: str,
) -> None:
    log = tmp_path / "events.jsonl"
    person_config(
        {
            "hooks": {
                "StopFailure": [logging_hook(log, matcher=expected)],
                "Stop": [logging_hook(log)],
            }
        }
    )
    configured.script(*errors)
    code, out, err = run_cli(capsys, "run", "This turn fails.")
    assert code != 0
    (failure,) = events(log)
    assert failure["hook_event_name"] == "StopFailure", "not Stop"
    assert set(failure) - {"env"} == recorded_keys("StopFailure")
    assert failure["error"] == expected
    message = errors[0].message
    assert message in failure["last_assistant_message"], "the error as you read it"
    assert failure["last_assistant_message"] in out + err


def test_stop_failure_output_is_ignored_and_its_matcher_is_the_error(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    person_config(
        {
            "hooks": {
                "StopFailure": [
                    logging_hook(log, matcher="rate_limit"),
                    blocking_hook("still failed"),
                    logging_hook(log, {"decision": "block", "continue": False}),
                ]
            }
        }
    )
    configured.script(Error(400, "refused"))
    code, _, _ = run_cli(capsys, "run", "fail")
    assert code != 0 and len(configured.requests) == 1, "no retry, nothing goes on"
    (failure,) = events(log)
    assert failure["error"] == "unknown", "the rate_limit matcher did not match"


# ---- TaskCreated / TaskCompleted -------------------------------------------------------


def todos(*items: tuple[str, str]) -> dict[str, Any]:
    return {"todos": [{"content": content, "status": status} for content, status in items]}


def test_todo_items_added_and_completed_fire_task_created_and_completed(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    person_config(
        {"hooks": {"TaskCreated": [logging_hook(log)], "TaskCompleted": [logging_hook(log)]}}
    )
    configured.script(
        call("todowrite", "t1", **todos(("Run tests", "pending"), ("Fix bug", "pending"))),
        call("todowrite", "t2", **todos(("Run tests", "completed"), ("Fix bug", "in_progress"))),
        call("todowrite", "t3", **todos(("Run tests", "completed"), ("Fix bug", "completed"))),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "plan it")
    assert code == 0, err
    found = [(e["hook_event_name"], e["task_id"], e["task_subject"]) for e in events(log)]
    assert found == [
        ("TaskCreated", "1", "Run tests"),
        ("TaskCreated", "2", "Fix bug"),
        ("TaskCompleted", "1", "Run tests"),
        ("TaskCompleted", "2", "Fix bug"),
    ], "each once: an item already there is not created again, nor completed"
    created = events(log)[0]
    assert set(created) - {"env"} == recorded_keys("TaskCreated") - {"task_description"}
    assert set(events(log)[2]) - {"env"} == recorded_keys("TaskCompleted") - {"task_description"}
    assert UUID.match(created["prompt_id"])


def test_task_hooks_that_exit_2_keep_an_item_out_or_unfinished(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    refuse = (
        "if 'secret' in event['task_subject'] or event['hook_event_name'] == 'TaskCompleted':\n"
        "    sys.stderr.write('tests are failing')\n"
        "    sys.exit(2)"
    )
    hook = script_hook(tmp_path, "refuse", refuse)
    person_config({"hooks": {"TaskCreated": [hook], "TaskCompleted": [hook]}})
    configured.script(
        call("todowrite", "t1", **todos(("Write code", "pending"), ("A secret task", "pending"))),
        call("todowrite", "t2", **todos(("Write code", "completed"))),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "plan it")
    assert code == 0, err
    first = tool_results(configured.requests[1])[0]
    assert "[ ] Write code" in first and "A secret task (medium" not in first
    assert "[TaskCreated hook] Not added: A secret task (tests are failing)" in first
    second = tool_results(configured.requests[2])[1]
    assert "[ ] Write code" in second, "not completed: it keeps its status"
    assert "[TaskCompleted hook] Not completed: Write code (tests are failing)" in second


# ---- MessageDisplay --------------------------------------------------------------------


def test_message_display_gets_each_step_text_whole_but_not_a_subagents(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    shown = {"hookSpecificOutput": {"displayContent": "REPLACED"}}
    person_config(
        {
            "hooks": {
                "MessageDisplay": [logging_hook(log, shown)],
                "PreToolUse": [logging_hook(log)],
                "Stop": [logging_hook(log)],
            }
        }
    )
    task = ToolCalls(
        [Call("task", json.dumps({"description": "look", "prompt": "find it"}), id="c_t")],
        text="Let me delegate.\nOne moment.",
    )
    configured.script(task, Text("the child answer"), Text("All done: the tests ran."))
    code, out, err = run_cli(capsys, "run", "delegate")
    assert code == 0, err
    names = [e["hook_event_name"] for e in events(log)]
    assert names == ["MessageDisplay", "PreToolUse", "MessageDisplay", "Stop"]
    first, _, last, stop = events(log)
    assert set(last) - {"env"} == recorded_keys("MessageDisplay")
    assert first["delta"] == "Let me delegate.\nOne moment.", "the whole text, lines and all"
    assert last["delta"] == "All done: the tests ran." == stop["last_assistant_message"]
    assert (first["index"], first["final"], last["index"], last["final"]) == (0, True, 0, True)
    assert first["turn_id"] == last["turn_id"], "one turn"
    assert first["message_id"] != last["message_id"], "two messages"
    assert first["prompt_id"] == stop["prompt_id"]
    assert "All done: the tests ran." in out and "REPLACED" not in out, "display only"


# ---- Notification idle_prompt ----------------------------------------------------------

FIRST_REQUEST = 60.0
"""Seconds the app's first request may take: litellm is imported for it, in this process,
when no earlier test of the worker did."""


async def answered(pilot: Any, server: FakeOpenAI, text: str) -> None:
    """Send `text` in the app and wait until it is answered."""
    from tests.tui_helpers import type_and_send, wait_for

    sent = len(server.requests)
    await type_and_send(pilot, text)
    await wait_for(pilot, lambda: len(server.requests) > sent, "sent", timeout=FIRST_REQUEST)
    await wait_for(pilot, lambda: pilot.app.chat.status == "idle", "answered")


async def test_the_app_tells_notification_hooks_when_nobody_answers_a_turn(
    configured: FakeOpenAI, tmp_path: Path
) -> None:
    """The app shows the turn's end while its Stop hook still runs (held until the test
    lets it go): the wait starts when the turn ends, not before."""
    from tests.tui_helpers import open_app, wait_for

    log, running, release = (tmp_path / name for name in ("events.jsonl", "running", "go"))
    held = (
        f"import os, time\nopen({str(running)!r}, 'w').close()\n"
        f"while not os.path.exists({str(release)!r}):\n    time.sleep(0.01)"
    )
    hooks = {
        "Notification": [logging_hook(log, matcher="idle_prompt")],
        "UserPromptSubmit": [logging_hook(log)],
        "Stop": [script_hook(tmp_path, "held", held)],
    }
    person_config({"idle_notification": 0.05, "hooks": hooks})
    configured.script(Text("hi"))
    app = await open_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.loaded.wait()
        await answered(pilot, configured, "Just say hi.")
        assert app.chat.session is not None
        session, engine = app.chat.session.id, app.chat.engine
        await wait_for(pilot, running.exists, "the Stop hook running")
        assert engine.is_busy(session) and not engine.idle.waiting(session)
        release.touch()
        await wait_for(pilot, lambda: events(log, "Notification"), "the idle_prompt")
    await app.engine.close()
    await app.db.close()
    submit, idle = events(log)
    assert set(idle) - {"env", "title"} == recorded_keys("Notification.idle_prompt") | {
        "permission_mode"
    }
    assert idle["notification_type"] == "idle_prompt"
    assert idle["message"] == "agent-tui is waiting for your input"
    assert idle["prompt_id"] == submit["prompt_id"] and idle["session_id"] == submit["session_id"]
    assert idle["env"]["CLAUDE_CODE_ENTRYPOINT"] == "cli", "the app, as Claude Code's own"


async def test_typing_after_a_turn_means_the_person_is_there(
    configured: FakeOpenAI, tmp_path: Path
) -> None:
    from tests.tui_helpers import open_app, wait_for

    person_config({"hooks": {"Notification": [logging_hook(tmp_path / "events.jsonl")]}})
    configured.script(Text("hi"), Text("again"))
    app = await open_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await app.loaded.wait()
        await answered(pilot, configured, "Just say hi.")
        assert app.chat.session is not None
        session = app.chat.session.id
        idle = app.chat.engine.idle
        await wait_for(pilot, lambda: idle.waiting(session), "waiting for the person (60 s)")
        await pilot.press("x")
        await wait_for(pilot, lambda: not idle.waiting(session), "the person typed")
        await answered(pilot, configured, "Once more.")
        await wait_for(pilot, lambda: idle.waiting(session), "waiting again after that turn")
    await app.engine.close()  # as the app's launch does when it exits
    await app.db.close()
    assert not idle.waiting(session), "closing the engine ends the wait"
