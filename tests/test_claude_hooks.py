"""Hooks as Claude Code runs them (issue 43, part 2), each with a shell or Python script
written as Claude Code's documentation writes them: the fields every event carries (a
transcript in Claude Code's JSONL shape, its tool names, absolute paths, the permission
mode), what a hook may answer (`updatedInput`, `continue: false`, `systemMessage`,
`permissionDecision: ask`), SessionStart's sources, prompt hooks, and what goes wrong
(malformed output, a crash, a child left in the background, an unknown event)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_tui.config.hook_config import claude_input, our_input
from tests.conftest import SMALL, person_config, write_config
from tests.engine_helpers import open_engine, run_cli, tool_results
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls


def command_hook(command: str, matcher: str = "", **more: Any) -> dict[str, Any]:
    return {"matcher": matcher, "hooks": [{"type": "command", "command": command, **more}]}


def own_hooks(hooks: dict[str, list[dict[str, Any]]], **more: Any) -> None:
    person_config({"hooks": hooks, **more})


def logger(log: Path) -> str:
    """Claude Code's documented logger, with jq: each event as one line."""
    return f"jq -c . >> {log}"


def answer(reply: dict[str, Any], log: Path | None = None) -> str:
    """A hook that logs its event and prints `reply` as its JSON answer."""
    script = "import json, sys\nevent = json.load(sys.stdin)\n"
    if log is not None:
        script += f"open({str(log)!r}, 'a').write(json.dumps(event) + '\\n')\n"
    script += f"print(json.dumps({reply!r}))\n"
    path = log.with_suffix(f".{abs(hash(script))}.py") if log else Path.cwd() / "answer.py"
    path.write_text(script, encoding="utf-8")
    return f"{sys.executable} {path}"


def events(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def bash(command: str) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))])


needs_jq = pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")


@needs_jq
def test_every_event_carries_a_current_transcript_claude_names_and_absolute_paths(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "events.jsonl"
    own_hooks({"PreToolUse": [command_hook(logger(log))], "Stop": [command_hook(logger(log))]})
    (Path.cwd() / "notes.txt").write_text("hello\n")
    read = ToolCalls([Call("read", json.dumps({"file_path": "notes.txt"}), id="call_r")])
    configured.script(read, Text("the notes say hello"))
    code, _, err = run_cli(capsys, "run", "what do the notes say?")
    assert code == 0, err
    pre, stop = events(log)
    assert pre["tool_name"] == "Read" and pre["tool_use_id"] == "call_r"
    assert pre["tool_input"]["file_path"] == str(Path.cwd() / "notes.txt"), "absolute"
    assert pre["permission_mode"] == "default" and pre["session_id"].startswith("ses_")
    transcript = [
        json.loads(line) for line in Path(stop["transcript_path"]).read_text().splitlines()
    ]
    assert transcript[0]["type"] == "user"
    assert transcript[0]["message"]["content"] == "what do the notes say?"
    uses = [
        b for line in transcript if line["type"] == "assistant" for b in line["message"]["content"]
    ]
    assert {"type": "tool_use", "id": "call_r", "name": "Read"}.items() <= uses[0].items()
    results = [
        b
        for line in transcript
        if line["type"] == "user"
        for b in line["message"]["content"]
        if isinstance(b, dict)
    ]
    assert results[0]["type"] == "tool_result" and "hello" in results[0]["content"]
    last = transcript[-1]
    assert last["type"] == "assistant"
    assert last["message"]["content"] == [{"type": "text", "text": "the notes say hello"}]
    assert all(line["sessionId"] == pre["session_id"] for line in transcript)


def test_updated_input_is_what_runs_and_the_person_sees_it(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    safer = Path.cwd() / "safer.txt"  # in the project: the sandbox lets it write there
    specific = {"hookEventName": "PreToolUse", "updatedInput": {"command": f"touch {safer}"}}
    own_hooks({"PreToolUse": [command_hook(answer({"hookSpecificOutput": specific}), "Bash")]})
    wanted = Path.cwd() / "wanted.txt"
    configured.script(bash(f"touch {wanted}"), Text("done"))
    code, _, err = run_cli(capsys, "run", "make a file")
    assert code == 0, err
    assert safer.exists() and not wanted.exists(), err
    sent = json.dumps(configured.requests[1]["messages"])
    assert "safer.txt" in sent and "wanted.txt" not in sent, "the call is kept as it ran"


@needs_jq
def test_inputs_claude_code_names_otherwise_are_read_and_answered_by_its_names(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code's Grep takes `glob` where agent-tui's grep takes `include`, and its Task
    `subagent_type` where agent-tui's task takes `agent`: a hook reads and answers those."""
    log = tmp_path / "events.jsonl"
    specific = {"hookEventName": "PreToolUse", "updatedInput": {"glob": "*.md"}}
    reply = answer({"hookSpecificOutput": specific}, log)
    own_hooks({"PreToolUse": [command_hook(reply, "Grep")], "Stop": [command_hook(logger(log))]})
    (Path.cwd() / "notes.md").write_text("needle in the notes\n")
    (Path.cwd() / "code.py").write_text("needle = 1\n")
    search = json.dumps({"pattern": "needle", "include": "*.py"})
    configured.script(ToolCalls([Call("grep", search, id="call_g")]), Text("found"))
    code, _, err = run_cli(capsys, "run", "find the needle")
    assert code == 0, err
    pre, stop = events(log)
    assert pre["tool_name"] == "Grep" and pre["tool_input"]["glob"] == "*.py"
    assert "include" not in pre["tool_input"]
    (output,) = tool_results(configured.requests[1])
    assert "notes.md" in output and "code.py" not in output, "the hook's glob ran"
    transcript = Path(stop["transcript_path"]).read_text().splitlines()
    uses = [
        b
        for line in map(json.loads, transcript)
        if line["type"] == "assistant"
        for b in line["message"]["content"]
        if b.get("type") == "tool_use"
    ]
    assert uses[0]["input"] == {"pattern": "needle", "glob": "*.md"}
    task = {"description": "look", "prompt": "find it", "agent": "explore"}
    assert claude_input("task", task)["subagent_type"] == "explore"
    assert our_input("task", {"subagent_type": "general"}) == {"agent": "general"}


def test_continue_false_stops_the_agent_and_the_person_reads_why(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    reply = {"continue": False, "stopReason": "Build broke: stopping here"}
    own_hooks({"PostToolUse": [command_hook(answer(reply))]})
    configured.script(bash("echo one"), Text("never asked"))
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert len(configured.requests) == 1, "no request after the hook stopped the agent"
    assert "A hook stopped the agent: Build broke: stopping here" in err


def test_a_system_message_is_shown_to_the_person_not_the_model(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    own_hooks({"UserPromptSubmit": [command_hook(answer({"systemMessage": "SHOWN-TO-YOU"}))]})
    configured.script(Text("hi"))
    code, _, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    assert "SHOWN-TO-YOU" in err
    assert "SHOWN-TO-YOU" not in json.dumps(configured.requests[0]["messages"])


def test_permission_decision_ask_asks_even_where_config_allows(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    specific = {"hookEventName": "PreToolUse", "permissionDecision": "ask"}
    own_hooks({"PreToolUse": [command_hook(answer({"hookSpecificOutput": specific}), "Bash")]})
    marker = Path.cwd() / "ran.txt"
    configured.script(bash(f"touch {marker}"), Text("ok"))
    code, _, err = run_cli(capsys, "run", "go")  # bash is allowed; nobody is here to ask
    assert code == 0, err
    assert not marker.exists()
    assert "needs the person's approval" in tool_results(configured.requests[1])[-1]


async def test_session_start_hears_startup_resume_clear_and_compact(
    isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path
) -> None:
    """And SessionEnd its reason, which its matcher matches: `clear` for the session /new
    leaves, `other` for the rest when an engine that is not the app's closes."""
    write_config(isolated, fake_llm, models=SMALL)
    log = tmp_path / "starts.jsonl"
    ends = tmp_path / "ends.jsonl"
    context = {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "RE-READ-TODO.md",
        }
    }
    own_hooks(
        {
            "SessionStart": [
                command_hook(answer({}, log), "startup|resume|clear"),
                command_hook(answer(context, log), "compact"),
            ],
            "SessionEnd": [
                command_hook(answer({}, ends), "clear|other"),
                command_hook(answer({}, ends), "prompt_input_exit"),
            ],
        }
    )
    fake_llm.script(Text("one"), Text("THE-SUMMARY"), Text("two"), Text("three"), Text("four"))
    async with open_engine() as engine:
        first = await engine.new_session(isolated)
        await engine.prompt(first.id, "first")
        await engine.compact(first.id)
        await engine.prompt(first.id, "after the compaction")
        await engine.start_afresh(first.id)
        assert [(e["session_id"], e["reason"]) for e in events(ends)] == [(first.id, "clear")]
        cleared = await engine.new_session(isolated)
        await engine.prompt(cleared.id, "a clean slate")
    async with open_engine() as engine:
        await engine.prompt(first.id, "back again")
    assert [e["source"] for e in events(log)] == ["startup", "compact", "clear", "resume"]
    assert [(e["session_id"], e["reason"]) for e in events(ends)] == [
        (first.id, "clear"),
        (cleared.id, "other"),
        (first.id, "other"),
    ], "each once; the prompt_input_exit hook never ran"
    after = json.dumps(fake_llm.requests[2]["messages"])
    assert "THE-SUMMARY" in after and "RE-READ-TODO.md" in after, "compact's context is put back"


def test_a_prompt_hook_asks_the_model_and_its_no_blocks(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = {"type": "prompt", "prompt": "Refuse prompts about production: $ARGUMENTS"}
    own_hooks({"UserPromptSubmit": [{"hooks": [hook]}]})
    configured.script(Text('{"ok": false, "reason": "production is off limits"}'))
    code, out, _ = run_cli(capsys, "run", "deploy to production")
    assert code == 0
    assert "blocked the prompt: production is off limits" in out
    (asked,) = configured.requests
    question = json.dumps(asked["messages"])
    assert "Refuse prompts about production" in question and "deploy to production" in question


def test_malformed_output_and_a_crash_are_one_clear_warning_each(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text("import sys, json\njson.load(sys.stdin)\nraise ValueError('no config here')\n")
    own_hooks(
        {
            "PreToolUse": [command_hook('echo \'{"decision": "block",\'')],
            "PostToolUse": [command_hook(f"{sys.executable} {crash}")],
        }
    )
    configured.script(bash("echo ran"), Text("ok"))
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert "printed JSON that does not parse" in err
    assert "failed (exit 1): ValueError: no config here" in err
    assert "Traceback (most recent call last)" not in err


def test_a_child_left_in_the_background_does_not_hold_the_result(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = f"bg-child-{tmp_path.name}"
    child = f"({sys.executable} -c 'import time; time.sleep(300)' {marker} &)"
    specific = {"hookEventName": "PreToolUse", "permissionDecision": "deny"}
    reply = json.dumps({"hookSpecificOutput": {**specific, "permissionDecisionReason": "BG-DENY"}})
    own_hooks({"PreToolUse": [command_hook(f"{child}; echo '{reply}'", timeout=120)]})
    configured.script(bash("echo should-not-run"), Text("ok"))
    try:
        code, _, err = run_cli(capsys, "run", "go")
    finally:
        subprocess.run(["pkill", "-f", marker], check=False)
    assert code == 0, err
    assert "timed out" not in err
    assert "BG-DENY" in tool_results(configured.requests[1])[-1]


def test_an_unknown_event_is_a_warning_not_an_invalid_config(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    own_hooks({"TeleportStart": [command_hook("true")], "Stop": [command_hook("true")]})
    configured.script(Text("fine"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0, err
    assert "fine" in out
    assert "unknown event TeleportStart (ignored)" in err


def test_a_stop_hooks_continuation_starts_on_its_own_line(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = tmp_path / "once"
    script = tmp_path / "stop.sh"
    script.write_text(f'[ -e {flag} ] && exit 0\ntouch {flag}\necho "run the tests" >&2\nexit 2\n')
    own_hooks({"Stop": [command_hook(f"sh {script}")]})
    configured.script(Text("first delta"), Text("alpha beta"))
    code, out, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert "first delta\nalpha beta" in out


def test_a_refused_first_prompt_leaves_no_empty_session(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    own_hooks({"UserPromptSubmit": [command_hook("echo no >&2; exit 2")]})
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0 and "blocked the prompt: no" in out
    code, out, err = run_cli(capsys, "sessions", "--json")
    assert code == 0, err
    assert json.loads(out) == []


@pytest.mark.parametrize("event", ["PreToolUse", "UserPromptSubmit"])
def test_continue_false_before_a_call_or_a_prompt_stops_it_too(
    configured: FakeOpenAI, event: str, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = Path.cwd() / "ran.txt"
    own_hooks({event: [command_hook(answer({"continue": False, "stopReason": "HALT-7"}))]})
    configured.script(bash(f"touch {marker}"), Text("never"))
    code, out, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    assert "HALT-7" in (err if event == "PreToolUse" else out) and not marker.exists()
    assert len(configured.requests) == (1 if event == "PreToolUse" else 0)


def test_a_hook_of_a_type_agent_tui_cannot_run_is_a_warning(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    http = {"type": "http", "url": "http://127.0.0.1:9/hook"}
    own_hooks({"UserPromptSubmit": [{"hooks": [http]}]})
    configured.script(Text("fine"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0 and "fine" in out
    assert 'has type "http", which agent-tui cannot run.' in err


async def test_auto_accepted_edits_are_accept_edits_to_a_hook(
    configured: FakeOpenAI, tmp_path: Path
) -> None:
    log = tmp_path / "events.jsonl"
    own_hooks({"PreToolUse": [command_hook(answer({}, log))]})
    configured.script(
        bash("echo hi"), Text("ok"), bash("echo again"), Text("ok"), bash("ls"), Text("ok")
    )
    async with open_engine() as engine:
        session = await engine.new_session(Path.cwd())
        engine.live(session.id).permission_mode = "auto-edits"  # the app's Shift+Tab
        await engine.prompt(session.id, "go")
        engine.live(session.id).permission_mode = "ask"
        await engine.prompt(session.id, "again")
        await engine.prompt(session.id, "plan it", agent="plan")
    assert [e["permission_mode"] for e in events(log)] == ["acceptEdits", "default", "plan"]


@needs_jq
def test_the_transcript_grows_as_a_log_across_turns_and_processes(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the newest message is written again at each event: the file of a long
    session is brought up to date, never rewritten whole (hooks/transcript.py)."""
    log = tmp_path / "events.jsonl"
    own_hooks({"Stop": [command_hook(logger(log))]})
    configured.script(Text("first answer"), Text("second answer"))
    assert run_cli(capsys, "run", "first question")[0] == 0
    assert run_cli(capsys, "run", "-c", "second question")[0] == 0
    first, second = events(log)
    assert first["transcript_path"] == second["transcript_path"]
    lines = [json.loads(x) for x in Path(second["transcript_path"]).read_text().splitlines()]
    texts = [
        line["message"]["content"]
        if line["type"] == "user"
        else line["message"]["content"][0]["text"]
        for line in lines
    ]
    assert texts == ["first question", "first answer", "second question", "second answer"]
    assert [line["parentUuid"] for line in lines] == [None, *(line["uuid"] for line in lines[:-1])]


def test_a_prompt_hooks_answer_that_is_not_its_json_is_a_warning(
    configured: FakeOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = {"type": "prompt", "prompt": "Is this prompt fine?"}
    own_hooks({"UserPromptSubmit": [{"hooks": [hook]}]})
    configured.script(Text("Looks fine to me."), Text("answered"))
    code, out, err = run_cli(capsys, "run", "hello")
    assert code == 0 and "answered" in out
    assert "got an answer that is not its JSON: Looks fine to me." in err
