"""Claude Code's hook contract, whole (issue 51, item 1), each part with a real hook
script against the fake OpenAI server: the events that were accepted and never fired
(SubagentStart/SubagentStop, PermissionRequest, PostToolUseFailure, Notification), the
`Agent` tool name (`Task` still matches), `tool_response` in Claude Code's shape per tool,
the typed `/command` prompt, `prompt_id`, `duration_ms`, `last_assistant_message`,
`CLAUDE_ENV_FILE` and `CLAUDE_CODE_ENTRYPOINT`, a deny rule answering before PreToolUse
hooks, and SessionStart's context once per request however many times a session was
continued. The person's own hooks may log anywhere; a project's run in the sandbox, so
theirs log inside the project."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_tui.tool.base import PermissionReply, PermissionRequest
from tests.conftest import MODEL, person_config
from tests.engine_helpers import open_engine, run_cli, tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage
from tests.hook_shapes import RECORDED

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def logging_hook(log: Path, reply: dict[str, Any] | None = None, matcher: str = "") -> dict:
    """A Python hook that logs its event (with the variables Claude Code sets) and prints
    `reply` as its JSON answer."""
    script = log.with_name(f"hook-{abs(hash((str(log), json.dumps(reply))))}.py")
    script.write_text(
        "import json, os, sys\n"
        "event = json.load(sys.stdin)\n"
        "event['env'] = {k: os.environ.get(k) for k in"
        " ('CLAUDE_PROJECT_DIR', 'CLAUDE_CODE_ENTRYPOINT', 'CLAUDE_ENV_FILE')}\n"
        f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n"
        + (f"print(json.dumps({reply!r}))\n" if reply is not None else ""),
        encoding="utf-8",
    )
    return {
        "matcher": matcher,
        "hooks": [{"type": "command", "command": f"{sys.executable} {script}"}],
    }


def events(log: Path, name: str | None = None) -> list[dict[str, Any]]:
    found = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
    return [e for e in found if name is None or e["hook_event_name"] == name]


def call(tool: str, call_id: str = "call_1", **arguments: Any) -> ToolCalls:
    return ToolCalls([Call(tool, json.dumps(arguments), id=call_id)])


def test_subagents_fire_start_and_stop_and_the_task_tool_is_agent(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    person_config(
        {
            "hooks": {
                "SubagentStart": [
                    logging_hook(log, {"hookSpecificOutput": {"additionalContext": "SUB-CTX"}})
                ],
                "SubagentStop": [logging_hook(log, matcher="task")],
                "PreToolUse": [logging_hook(log, matcher="Agent")],
                "PostToolUse": [logging_hook(log, matcher="Task")],
            }
        }
    )
    task = call("task", "call_t", description="look around", prompt="find the answer")
    (Path.cwd() / "notes.txt").write_text("the answer\n")
    usage = Usage(prompt_tokens=1200, completion_tokens=30, cached_tokens=1000, reasoning_tokens=5)
    configured.script(
        task,
        call("read", "call_c", file_path="notes.txt"),
        Text("the child answer", usage=usage),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "delegate")
    assert code == 0, err
    (start,) = events(log, "SubagentStart")
    (stop,) = events(log, "SubagentStop")
    (pre,) = events(log, "PreToolUse")
    (post,) = events(log, "PostToolUse")
    assert pre["tool_name"] == post["tool_name"] == "Agent", "Claude Code's name; Task matches"
    assert start["agent_type"] == stop["agent_type"] == "task"
    assert start["agent_id"] == stop["agent_id"] and start["agent_id"] != start["session_id"]
    assert start["session_id"] == pre["session_id"], "the caller's session"
    assert stop["last_assistant_message"] == "the child answer"
    assert stop["stop_hook_active"] is False
    child_lines = Path(stop["agent_transcript_path"]).read_text().splitlines()
    assert "the child answer" in child_lines[-1]
    assert post["tool_response"]["status"] == "completed"
    assert post["tool_response"]["agentId"] == stop["agent_id"]
    assert post["tool_response"]["agentType"] == "task"
    assert "the child answer" in post["tool_response"]["content"][0]["text"]
    assert "SUB-CTX" in json.dumps(configured.requests[1]["messages"]), "in the child's request"
    # The child's own figures, as Claude Code gives them: its last step's usage (the
    # cache apart from the uncached input), their sum, every call it made, its model.
    assert post["tool_response"]["usage"] == {
        "input_tokens": 200,
        "output_tokens": 30,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 1000,
    }
    assert post["tool_response"]["totalTokens"] == 1230
    assert post["tool_response"]["totalToolUseCount"] == 1
    assert post["tool_response"]["resolvedModel"] == MODEL


def test_tool_responses_have_claude_codes_shapes(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hooks written for Claude Code read `.tool_response.stdout` and `.filePath`."""
    log, read_by_jq = tmp_path / "events.jsonl", tmp_path / "jq.txt"
    jq = f"jq -r '.tool_response.stdout // .tool_response.filePath' >> {read_by_jq}"
    jq_hook = {"matcher": "Bash|Write", "hooks": [{"type": "command", "command": jq}]}
    person_config({"hooks": {"PostToolUse": [logging_hook(log), jq_hook]}})
    notes = Path.cwd() / "notes.txt"
    notes.write_text("one\ntwo\nthree\n")
    made = Path.cwd() / "made.txt"
    configured.script(
        call("bash", "call_b", command="echo out; echo err >&2"),
        call("read", "call_r", file_path="notes.txt", offset=2, limit=1),
        call("write", "call_w", file_path="made.txt", content="fresh\n"),
        call("edit", "call_e", file_path="notes.txt", old_string="two", new_string="TWO"),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "work")
    assert code == 0, err
    bash, read, write, edit = events(log)
    if shutil.which("jq"):  # as a Claude Code project's hooks read them
        assert read_by_jq.read_text().splitlines() == ["out", "err", str(made)]
    assert bash["tool_response"] == {
        "stdout": "out\nerr",
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        "noOutputExpected": False,  # echo prints
    }
    assert isinstance(bash["duration_ms"], int) and bash["duration_ms"] >= 0
    assert read["tool_response"] == {
        "type": "text",
        "file": {
            "filePath": str(notes),
            "content": "two",
            "numLines": 1,
            "startLine": 2,
            "totalLines": 4,  # Claude Code counts the pieces between "\n"s
        },
    }
    assert write["tool_response"]["type"] == "create"
    assert write["tool_response"]["filePath"] == str(made)
    assert write["tool_response"]["content"] == "fresh\n"
    assert write["tool_response"]["originalFile"] is None
    assert write["tool_response"]["structuredPatch"] == [], "a created file has no patch"
    assert edit["tool_input"]["replace_all"] is False, "filled in, as Claude Code sends it"
    response = edit["tool_response"]
    assert response["filePath"] == str(notes) and response["originalFile"] == "one\ntwo\nthree\n"
    assert (response["oldString"], response["newString"]) == ("two", "TWO")
    assert response["replaceAll"] is False and response["userModified"] is False
    (hunk,) = response["structuredPatch"]
    assert hunk["lines"] == [" one", "-two", "+TWO", " three"]
    assert (hunk["oldStart"], hunk["oldLines"], hunk["newStart"], hunk["newLines"]) == (1, 3, 1, 3)


def recorded_response(name: str) -> dict[str, Any]:
    """The `tool_response` Claude Code gave a hook in one recorded fixture."""
    return json.loads((RECORDED / f"{name}.json").read_text())["input"]["tool_response"]


def test_tool_responses_carry_claude_codes_figures(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each field as Claude Code 2.1.197 gives it; where agent-tui makes the call Claude
    Code's recording made, the value Claude Code gave."""
    log = tmp_path / "events.jsonl"
    hooks = {"PostToolUse": [logging_hook(log)], "PostToolUseFailure": [logging_hook(log)]}
    person_config({"hooks": hooks})
    src = Path.cwd() / "src"
    src.mkdir()
    (src / "app.py").write_text("def main():\n    return 'hello'\n\n\nmain()\n")
    (src / "new_module.py").write_text(recorded_response("PostToolUse.Edit.edit")["originalFile"])
    (src / "many.txt").write_text("hit\n" * 101)
    (Path.cwd() / "notes.txt").write_text("a\nb\n")
    edit = {"old_string": "foo", "new_string": "bar", "replace_all": True}
    configured.script(
        call("bash", "c1", command="mkdir -p out && touch out/x"),
        call("bash", "c2", command="grep nothing notes.txt"),
        call("read", "c3", file_path="src/app.py"),
        call("edit", "c4", file_path="src/new_module.py", **edit),
        call("write", "c5", file_path="notes.txt", content="a\nB\n"),
        call("grep", "c6", pattern="def ", path="src"),
        call("grep", "c7", pattern="hit", path="src"),
        call("glob", "c8", pattern="**/*.py"),
        call("bash", "c9", command="seq 1 3000"),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "work")
    assert code == 0, err
    silent, no_match, read, edited, written, found, capped, globbed, long = events(log)
    assert silent["tool_response"]["noOutputExpected"] is True, "mkdir and touch print nothing"
    assert silent["tool_response"]["stdout"] == ""
    assert "returnCodeInterpretation" not in silent["tool_response"]
    assert no_match["hook_event_name"] == "PostToolUse", "grep's exit 1 is an answer"
    assert no_match["tool_response"]["returnCodeInterpretation"] == "No matches found"
    assert no_match["tool_response"]["stdout"] == ""
    assert no_match["tool_response"]["noOutputExpected"] is False
    assert "Exit code: 1" in tool_results(configured.requests[2])[-1], "the model reads it"

    recorded_file = recorded_response("PostToolUse.Read.read")["file"]
    assert read["tool_response"]["file"] == {**recorded_file, "filePath": str(src / "app.py")}
    recorded_edit = recorded_response("PostToolUse.Edit.edit")
    assert edited["tool_response"]["structuredPatch"] == recorded_edit["structuredPatch"]
    assert edited["tool_response"]["originalFile"] == recorded_edit["originalFile"]
    assert edited["tool_response"]["replaceAll"] is True
    assert written["tool_response"]["type"] == "update"
    assert written["tool_response"]["originalFile"] == "a\nb\n"
    assert written["tool_response"]["structuredPatch"] == [
        {"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2, "lines": [" a", "-b", "+B"]}
    ]

    recorded_grep = recorded_response("PostToolUse.Grep.search0")
    assert {k: v for k, v in found["tool_response"].items() if k != "content"} == {
        k: v for k, v in recorded_grep.items() if k != "content"
    }
    assert sorted(found["tool_response"]["content"].splitlines()) == sorted(
        recorded_grep["content"].splitlines()
    ), "path:line:text, relative to the session's folder (in agent-tui's order)"
    assert capped["tool_response"]["numLines"] == 100
    assert capped["tool_response"]["appliedLimit"] == 100, "101 matches, 100 shown"
    assert capped["tool_response"]["content"].splitlines()[0] == "src/many.txt:1:hit"
    glob = globbed["tool_response"]
    assert sorted(glob["filenames"]) == ["src/app.py", "src/new_module.py"]
    assert (glob["numFiles"], glob["totalMatches"], glob["truncated"]) == (2, 2, False)
    assert isinstance(glob["durationMs"], int)
    whole = "".join(f"{n}\n" for n in range(1, 3001))
    assert long["tool_response"]["persistedOutputSize"] == len(whole), "too long to show whole"
    assert Path(long["tool_response"]["persistedOutputPath"]).read_text() == whole
    assert "\n3000\n" in long["tool_response"]["stdout"], "the part the model read"


def test_effort_is_the_reasoning_effort_the_step_asked_for(
    isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code's `effort` in tool events and Stop, not in UserPromptSubmit; where no
    effort is set, none is sent."""
    from tests.conftest import write_config

    limit = {"context": 100_000, "output": 4_000}
    write_config(
        isolated, fake_llm, models={MODEL: {"limit": limit, "reasoning": {"effort": "high"}}}
    )
    log = tmp_path / "events.jsonl"
    person_config(
        {"hooks": {e: [logging_hook(log)] for e in ("UserPromptSubmit", "PreToolUse", "Stop")}}
    )
    fake_llm.script(call("bash", command="echo hi"), Text("done"))
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert fake_llm.requests[0]["reasoning_effort"] == "high"
    submit, pre, stop = events(log)
    assert pre["effort"] == stop["effort"] == {"level": "high"}
    assert "effort" not in submit, "as Claude Code's UserPromptSubmit"
    write_config(isolated, fake_llm)  # no effort set
    fake_llm.script(call("bash", command="echo hi"), Text("done"))
    assert run_cli(capsys, "run", "again")[0] == 0
    assert all("effort" not in event for event in events(log)[3:])


def test_a_failed_call_fires_post_tool_use_failure_not_post_tool_use(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    advice = {"hookSpecificOutput": {"additionalContext": "CHECK-THE-PATH"}}
    person_config(
        {
            "hooks": {
                "PostToolUse": [logging_hook(log)],
                "PostToolUseFailure": [
                    logging_hook(log, advice, matcher="Read"),
                    logging_hook(log, matcher="Bash"),
                ],
            }
        }
    )
    configured.script(
        call("read", "call_r", file_path="missing.txt"),
        call("bash", "call_b", command="echo oops; exit 3"),
        Text("oh"),
    )
    code, _, err = run_cli(capsys, "run", "read it")
    assert code == 0, err
    failure, bash = events(log)
    assert bash["hook_event_name"] == "PostToolUseFailure", "a non-zero exit, as Claude Code"
    assert bash["error"] == "Exit code 3\noops"
    assert failure["hook_event_name"] == "PostToolUseFailure"
    assert failure["tool_name"] == "Read" and failure["tool_use_id"] == "call_r"
    assert "File not found" in failure["error"] and failure["is_interrupt"] is False
    assert isinstance(failure["duration_ms"], int)
    (result,) = tool_results(configured.requests[1])
    assert "File not found" in result and "CHECK-THE-PATH" in result


@pytest.mark.parametrize("behavior", ["allow", "deny"])
def test_a_permission_request_hook_answers_the_question(
    isolated: Path,
    fake_llm: FakeOpenAI,
    tmp_path: Path,
    behavior: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Headless, where nobody else could answer, as Claude Code runs them too."""
    from tests.conftest import write_config

    write_config(isolated, fake_llm, permission={"bash": "ask"})
    log = tmp_path / "events.jsonl"
    decision = {"behavior": behavior, "message": "NOT-NOW"}
    reply = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}
    person_config({"hooks": {"PermissionRequest": [logging_hook(log, reply, matcher="Bash")]}})
    marker = Path.cwd() / "ran.txt"
    fake_llm.script(call("bash", command=f"touch {marker}"), Text("ok"))
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    (asked,) = events(log)
    assert asked["tool_name"] == "Bash" and asked["tool_input"]["command"] == f"touch {marker}"
    assert "tool_use_id" not in asked, "Claude Code's PermissionRequest has none"
    assert asked["permission_suggestions"] == [  # what "always" would allow, for the session
        {
            "type": "addRules",
            "rules": [{"toolName": "Bash", "ruleContent": "touch:*"}],
            "behavior": "allow",
            "destination": "session",
        }
    ]
    assert marker.exists() == (behavior == "allow")
    if behavior == "deny":
        assert "NOT-NOW" in tool_results(fake_llm.requests[1])[-1]


async def test_a_notification_goes_out_when_the_person_is_asked(
    isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    from tests.conftest import write_config

    write_config(isolated, fake_llm, permission={"bash": "ask"})
    log = tmp_path / "events.jsonl"
    person_config({"hooks": {"Notification": [logging_hook(log, matcher="permission_prompt")]}})
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest) -> PermissionReply:
        asked.append(request)
        return "once"

    fake_llm.script(call("bash", command="echo hi"), Text("ok"))
    async with open_engine() as engine:
        engine.ctx.ask = ask
        session = await engine.new_session(Path.cwd())
        await engine.prompt(session.id, "go")
    assert len(asked) == 1
    (note,) = events(log)
    assert note["notification_type"] == "permission_prompt"
    assert note["message"] == "agent-tui needs your permission to use Bash"


def test_the_prompt_is_what_was_typed_and_ids_and_answers_are_given(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commands = Path.cwd() / ".claude" / "commands"
    commands.mkdir(parents=True)
    (commands / "run-tests.md").write_text("Run the tests of $ARGUMENTS and report.\n")
    log = tmp_path / "events.jsonl"
    hooks = {e: [logging_hook(log)] for e in ("UserPromptSubmit", "PreToolUse", "Stop")}
    person_config({"hooks": hooks})
    configured.script(call("bash", command="echo testing"), Text("all green"), Text("again"))
    code, _, err = run_cli(capsys, "run", "/run-tests core-module")
    assert code == 0, err
    assert "Run the tests of core-module" in json.dumps(configured.requests[0]["messages"])
    assert run_cli(capsys, "run", "-c", "once more")[0] == 0
    submit, pre, stop, again, _ = events(log)
    assert submit["prompt"] == "/run-tests core-module", "as typed, not the command's body"
    assert UUID.match(submit["prompt_id"]) and submit["prompt_id"] == pre["prompt_id"]
    assert stop["prompt_id"] == submit["prompt_id"] != again["prompt_id"]
    assert stop["last_assistant_message"] == "all green"
    assert submit["env"]["CLAUDE_CODE_ENTRYPOINT"] == "sdk-cli", "run is Claude Code's -p"
    assert submit["env"]["CLAUDE_PROJECT_DIR"] == str(Path.cwd())
    assert submit["env"]["CLAUDE_ENV_FILE"] is None, "SessionStart's alone"


def test_a_project_session_start_hooks_env_file_reaches_later_bash_commands(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """A project's hook runs in the sandbox: it logs inside the project and writes
    `CLAUDE_ENV_FILE`, which every later bash command of the session runs first."""
    claude = Path.cwd() / ".claude"
    claude.mkdir()
    setup = (
        'echo "$CLAUDE_ENV_FILE" > "$CLAUDE_PROJECT_DIR/env-file.txt"; '
        "echo 'export GREETING=hello-from-the-env-file' >> \"$CLAUDE_ENV_FILE\""
    )
    start = {"hooks": [{"type": "command", "command": setup}]}
    (claude / "settings.json").write_text(json.dumps({"hooks": {"SessionStart": [start]}}))
    configured.script(
        call("bash", "call_1", command="echo first=$GREETING"),
        call("bash", "call_2", command="bash -c 'echo nested=$GREETING'"),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "greet")
    assert code == 0, err
    env_file = Path((Path.cwd() / "env-file.txt").read_text().strip())
    assert env_file.name == "claude-env.sh" and not env_file.is_relative_to(Path.cwd())
    first, nested = tool_results(configured.requests[2])
    assert "first=hello-from-the-env-file" in first
    assert "nested=hello-from-the-env-file" in nested, "exported, so children have it"


def test_a_deny_rule_answers_before_pre_tool_use_hooks_run(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    rules = {"permissions": {"deny": ["Read(./.env)"]}}
    (Path.cwd() / ".claude").mkdir()
    (Path.cwd() / ".claude" / "settings.json").write_text(json.dumps(rules))
    (Path.cwd() / ".env").write_text("SECRET=1\n")
    person_config({"hooks": {"PreToolUse": [logging_hook(log)]}})
    configured.script(
        call("read", "call_1", file_path=".env"),
        call("read", "call_2", file_path="README.md"),
        Text("done"),
    )
    (Path.cwd() / "README.md").write_text("hello\n")
    code, _, err = run_cli(capsys, "run", "read")
    assert code == 0, err
    assert "denied" in tool_results(configured.requests[1])[0]
    (pre,) = events(log)
    assert pre["tool_input"]["file_path"] == str(Path.cwd() / "README.md"), "not the .env read"


def test_session_start_context_is_in_each_request_once_however_often_continued(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A `run --continue` per turn starts the session each time (`resume`): its context
    was added again each time, and every request carried one copy per earlier start."""
    log = tmp_path / "events.jsonl"
    reply = {"hookSpecificOutput": {"additionalContext": "START-MARKER-51"}}
    person_config({"hooks": {"SessionStart": [logging_hook(log, reply)]}})
    configured.script(
        call("bash", "c1", command="echo 1"),
        Text("a"),
        call("bash", "c2", command="echo 2"),
        Text("b"),
        Text("c"),
    )
    assert run_cli(capsys, "run", "one")[0] == 0
    assert run_cli(capsys, "run", "-c", "two")[0] == 0
    assert run_cli(capsys, "run", "-c", "three")[0] == 0
    assert [e["source"] for e in events(log)] == ["startup", "resume", "resume"]
    counts = [json.dumps(r["messages"]).count("START-MARKER-51") for r in configured.requests]
    assert counts == [1] * 5


def test_setup_and_newer_claude_code_events_are_accepted_without_a_warning(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code fires Setup only for `--init-only` and `-p --init|--maintenance`."""
    hooks = {
        name: [{"hooks": [{"type": "command", "command": "true"}]}]
        for name in ("Setup", "InstructionsLoaded", "PermissionDenied", "TeleportStart")
    }
    person_config({"hooks": hooks})
    configured.script(Text("fine"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0 and "fine" in out
    assert "unknown event TeleportStart (ignored)" in err
    assert "Setup" not in err and "InstructionsLoaded" not in err and "PermissionDenied" not in err
