"""Background commands (bash `run_in_background`, task_output, task_stop): started by the
model through the real engine against the fake provider, real processes, real signals.
What the model reads is asserted in the requests the fake server received."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_tui import procs
from agent_tui.config.settings import TruncationConfig, load_config
from agent_tui.events import BackgroundCommandsChanged, Event, PartUpdated
from agent_tui.records import ToolPart
from agent_tui.sandbox import probe
from agent_tui.session.engine import Engine
from agent_tui.tool.background import BackgroundCommands
from agent_tui.tool.background_output import MIN_UNREAD_CHARS
from agent_tui.tool.base import ToolContext
from agent_tui.tool.bash import SHARED_NETWORK_NOTE, BashParams, BashTool
from agent_tui.tool.task_output import TaskOutputParams, TaskOutputTool
from tests.conftest import person_config, write_config
from tests.engine_helpers import open_engine, run_cli, tool_results
from tests.fake_openai import Call, FakeOpenAI, Gated, Hang, Reply, Text, ToolCalls
from tests.process_helpers import agent_tui, wait_until
from tests.pty_helpers import PtyAgent
from tests.test_hooks import Hook
from tests.test_permission_rules import claude_settings
from tests.test_sandbox import processes_with

pytestmark = pytest.mark.skipif(not procs.LINUX, reason="the /proc checks need Linux")

UNSANDBOXED = {"enabled": False}
WAIT_S = 90.0
"""How long `until` waits for a state before failing: only a broken build reaches it (a
sandboxed command on a loaded machine was seen to take over 30 s to be announced)."""


def background(command: str, **extra: Any) -> ToolCalls:
    arguments = {"command": command, "run_in_background": True, **extra}
    return ToolCalls([Call("bash", json.dumps(arguments))])


async def until(condition: Callable[[], object], what: str) -> Any:
    """Until `condition()` is truthy (its value), checked as the event loop turns."""
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not (value := condition()):
        assert asyncio.get_running_loop().time() < deadline, f"never: {what}"
        await asyncio.sleep(0.02)
    return value


class Changes:
    """The BackgroundCommandsChanged events of an engine, newest last."""

    def __init__(self, engine: Engine) -> None:
        self.seen: list[BackgroundCommandsChanged] = []
        engine.subscribe(self._on)

    def _on(self, event: Event) -> None:
        if isinstance(event, BackgroundCommandsChanged):
            self.seen.append(event)

    def newest(self) -> dict[str, Any] | None:
        if not self.seen or not self.seen[-1].commands:
            return None
        return self.seen[-1].commands[-1].model_dump()


def user_texts(request: dict[str, Any]) -> str:
    parts = []
    for message in request["messages"]:
        if message["role"] == "user":
            content = message["content"]
            items = content if isinstance(content, list) else [{"text": content}]
            parts += [item.get("text", "") for item in items]
    return "\n".join(parts)


async def test_the_model_starts_a_server_reads_it_later_and_stops_it(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    served = isolated / "served"  # a unique argument: its processes are found by it
    served.mkdir()
    server = f"{sys.executable} -u -m http.server 0 --bind 127.0.0.1 --directory {served}"
    read, stop, gate = Call("task_output"), Call("task_stop"), threading.Event()
    fake_llm.script(
        background(server, description="a dev server"),
        Gated(ToolCalls([read]), gate),
        ToolCalls([stop]),
        Text("stopped it"),
    )
    async with open_engine() as engine:
        changes = Changes(engine)
        session = await engine.new_session(isolated)
        turn = asyncio.create_task(engine.prompt(session.id, "start a server"))
        started = await until(changes.newest, "the command is announced")
        assert started["status"] == "running" and started["description"] == "a dev server"
        saved = Path(started["output_path"])
        line = await until(
            lambda: re.search(r"port (\d+)", saved.read_text() if saved.is_file() else ""),
            "the server says its port",
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{line[1]}/") as answer:
            assert answer.status == 200  # it serves while the model goes on
        await until(lambda: "GET / HTTP" in saved.read_text(), "the request is logged")
        read.arguments = json.dumps({"task_id": started["id"], "block": False, "filter": "GET"})
        stop.arguments = json.dumps({"shell_id": started["id"]})  # KillShell's old name
        gate.set()
        result = await turn
        assert result is not None and result.outcome == "stop", result
        listed = (await engine.scope(session.id)).background.list()
    assert "network of its own" not in tool_results(fake_llm.requests[1])[-1]  # unsandboxed
    reading = tool_results(fake_llm.requests[2])[-1]
    assert "<status>running</status>" in reading
    assert '"GET / HTTP/1.1" 200' in reading
    assert "Serving HTTP" not in reading  # filtered out
    assert f"Stopped background command {started['id']}" in tool_results(fake_llm.requests[3])[-1]
    assert [c.status for c in listed] == ["stopped"]
    assert changes.seen[-1].commands[0].status == "stopped"
    assert processes_with(str(served)) == []


async def test_a_command_that_exits_is_told_to_the_model_at_its_next_step(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    gate = threading.Event()
    go = isolated / "go"  # the command ends once the next step has been asked
    fake_llm.script(
        background(f"until [ -e {go} ]; do sleep 0.02; done; echo first; echo last words; exit 3"),
        Gated(ToolCalls([Call("bash", json.dumps({"command": "true"}))]), gate),
        Text("noted"),
    )
    async with open_engine() as engine:
        changes = Changes(engine)
        session = await engine.new_session(isolated)
        turn = asyncio.create_task(engine.prompt(session.id, "run it"))
        await until(lambda: len(fake_llm.requests) >= 2, "the step after it started asked")
        go.touch()
        ended = await until(
            lambda: (c := changes.newest()) and c["status"] != "running" and c, "it ends"
        )
        gate.set()
        assert (await turn) is not None
    assert ended["status"] == "failed" and ended["exit_code"] == 3
    assert "task-notification" not in user_texts(fake_llm.requests[1])
    told = user_texts(fake_llm.requests[2])
    assert f"<task-id>{ended['id']}</task-id>" in told
    assert "failed with exit code 3" in told and "last words" in told
    assert told.count("<task-notification>") == 1


async def test_an_exit_while_idle_is_told_with_the_next_prompt(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    go = isolated / "go"
    fake_llm.script(
        background(f"while [ ! -e {go} ]; do sleep 0.05; done; echo built; exit 0"),
        Text("it runs"),
        Text("it finished"),
    )
    async with open_engine() as engine:
        changes = Changes(engine)
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "build in the background")
        go.touch()
        await until(lambda: (c := changes.newest()) and c["status"] == "exited", "it exits")
        await engine.prompt(session.id, "and now?")
    assert all("task-notification" not in user_texts(r) for r in fake_llm.requests[:2])
    told = user_texts(fake_llm.requests[2])
    assert "completed (exit code 0)" in told and "built" in told


async def test_the_person_stops_one_through_the_scope_and_the_model_is_told(
    isolated: Path, fake_llm: FakeOpenAI, nap: str
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    fake_llm.script(background(f"sleep {nap}", description="a long nap"), Text("ok"), Text("ok"))
    async with open_engine() as engine:
        changes = Changes(engine)
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "nap")
        await until(lambda: processes_with(nap), "it sleeps")
        scope = await engine.scope(session.id)  # what a command of a front-end gets
        (listed,) = scope.background.list()
        assert (listed.status, listed.description) == ("running", "a long nap")
        stopped = await scope.background.stop(listed.id)
        assert stopped.info.status == "stopped" and processes_with(nap) == []
        assert changes.seen[-1].commands[0].status == "stopped"
        await engine.prompt(session.id, "and?")
    told = user_texts(fake_llm.requests[2])
    assert '"a long nap" was stopped by the person' in told and "<status>killed" in told


async def test_a_bad_id_is_explained_and_a_read_after_the_end_needs_no_notice(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    read = Call("task_output")
    go = isolated / "go"
    fake_llm.script(
        background(f"while [ ! -e {go} ]; do sleep 0.05; done; echo done here"),
        ToolCalls([read, Call("task_stop", json.dumps({"task_id": "b000000"}))]),
        Text("ok"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)

        def aim(event: Event) -> None:  # the id, as the model would have read it
            if isinstance(event, BackgroundCommandsChanged) and read.arguments == "{}":
                read.arguments = json.dumps({"bash_id": event.commands[0].id})  # old name
            # It ends while the read waits for it, never before the step that reads it
            # was asked (an end before that would rightly be told to that step).
            part = event.part if isinstance(event, PartUpdated) else None
            if isinstance(part, ToolPart) and part.tool == "task_output":
                if part.state.status == "running":
                    go.touch()

        engine.subscribe(aim)
        # The read blocks until the command ends (Claude Code's default, block=true).
        await engine.prompt(session.id, "go")
    reading, stopping = tool_results(fake_llm.requests[2])[-2:]
    assert "<status>exited</status>" in reading and "<exit_code>0</exit_code>" in reading
    assert "done here" in reading
    assert "No background command has the id 'b000000'" in stopping
    assert "task-notification" not in user_texts(fake_llm.requests[2])


async def test_in_the_sandbox_and_stopped_when_the_engine_closes(
    isolated: Path, fake_llm: FakeOpenAI, tmp_path: Path, nap: str
) -> None:
    support = await probe()
    if not support.available:
        pytest.skip(f"no sandbox on this machine: {support.reason}")
    write_config(isolated, fake_llm)
    outside = tmp_path / "outside"
    outside.mkdir()
    fake_llm.script(
        background(f"touch {outside}/escaped; echo started; sleep {nap}"),
        Text("left it running"),
    )
    async with open_engine() as engine:
        changes = Changes(engine)
        session = await engine.new_session(isolated)
        await engine.prompt(session.id, "go")
        saved = Path((await until(changes.newest, "it starts"))["output_path"])
        await until(lambda: saved.is_file() and "started" in saved.read_text(), "it prints")
        sleeping = await until(lambda: processes_with(nap), "it sleeps")
        assert any(
            b"bwrap" in Path(f"/proc/{pid}/cmdline").read_bytes() for pid in ancestors(sleeping[0])
        ), "the background command runs outside the sandbox"
    assert not (outside / "escaped").exists()
    assert processes_with(nap) == []  # closing the engine stopped it
    assert SHARED_NETWORK_NOTE in tool_results(fake_llm.requests[1])[-1]  # its session's


def ancestors(pid: int) -> list[int]:
    found = []
    while (stat := procs._stat(pid)) is not None and int(stat[1]) > 1:
        pid = int(stat[1])
        found.append(pid)
    return found


async def test_task_stop_reaches_what_left_the_command_s_group(
    isolated: Path, fake_llm: FakeOpenAI, nap: str
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    stop, gate = Call("task_stop"), threading.Event()
    fake_llm.script(
        background(f"sleep {nap} & setsid sleep {nap} >/dev/null 2>&1 & wait"),
        Gated(ToolCalls([stop]), gate),
        Text("stopped"),
    )
    async with open_engine() as engine:
        changes = Changes(engine)
        session = await engine.new_session(isolated)
        turn = asyncio.create_task(engine.prompt(session.id, "start two sleeps"))
        started = await until(changes.newest, "it starts")
        await until(lambda: len(processes_with(nap)) == 2, "both sleeps run")
        stop.arguments = json.dumps({"task_id": started["id"]})
        gate.set()
        await turn
        assert processes_with(nap) == [], "task_stop left the setsid sleep running"


async def test_a_subagent_s_background_commands_end_with_its_answer(
    isolated: Path, fake_llm: FakeOpenAI, nap: str
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED, agent={"runner": {"tools": ["bash"]}})
    gate = threading.Event()
    task = {"description": "Start it", "prompt": "start a sleep", "agent": "runner"}
    fake_llm.script(
        ToolCalls([Call("task", json.dumps(task))]),
        background(f"sleep {nap}"),  # the subagent's step
        Gated(Text("it sleeps"), gate),  # its answer
        Text("done"),
    )
    async with open_engine() as engine:
        session = await engine.new_session(isolated)
        turn = asyncio.create_task(engine.prompt(session.id, "delegate"))
        await until(lambda: processes_with(nap), "the subagent's sleep runs")
        gate.set()
        await turn
        assert processes_with(nap) == [], "the subagent's command outlived its answer"


async def test_a_chatty_command_s_output_stays_bounded(tmp_path: Path) -> None:
    """20 MB printed: the saved file keeps its newest part within the cap, the next read
    holds at most the unread limit (what stays in memory) and says what was dropped."""
    limits = TruncationConfig(max_bytes=1024, max_saved_bytes=256 * 1024)
    ctx = ToolContext(
        "ses_test",
        "msg_test",
        "call_test",
        tmp_path,
        tmp_path / "tool-output",
        truncation=limits,
        background=BackgroundCommands("ses_test"),
    )
    script = "for i in range(200_000): print(f'line {i:06d} ' + 'x' * 90)"
    (tmp_path / "chatty.py").write_text(script)
    params = BashParams(command=f"{sys.executable} chatty.py", run_in_background=True)
    started = (await BashTool().execute(params, ctx)).metadata["background_id"]
    read = TaskOutputParams(task_id=started, timeout=WAIT_S * 1000)
    result = await TaskOutputTool().execute(read, ctx)
    assert "<status>exited</status>" in result.output
    assert "of earlier output was dropped before this read" in result.output
    assert len(result.output) < MIN_UNREAD_CHARS * 2
    assert "line 199999" in result.output  # the newest is what is kept
    saved = Path(ctx.background.get(started).info.output_path)
    assert saved.stat().st_size <= limits.max_saved_bytes + 1024
    text = saved.read_text()
    assert "cut from the start of this" in text and text.rstrip().endswith("x" * 90)


def test_claude_code_s_permission_rules_name_the_tools_old_and_new(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_settings(isolated, deny=["KillShell"], allow=["TaskOutput"])
    configured.script(
        background("echo hi"),
        ToolCalls([Call("task_stop", json.dumps({"task_id": "b000000"}))]),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "--trust", "go")
    assert code == 0, err
    assert "denied by config" in tool_results(configured.requests[2])[-1]
    config = load_config()
    assert config.permission["task_stop"] == {"*": "deny"}
    assert config.permission["task_output"] == {"*": "allow"}


# ---- no process outlives `agent-tui run` -------------------------------------------------


@pytest.fixture
def nap() -> Iterator[str]:
    """A unique `sleep` argument: the test's processes are found by it, and killed at the
    end whatever happened."""
    unique = f"{300 + os.getpid() % 1000}.{time.monotonic_ns() % 10**6:06d}"
    yield unique
    for pid in processes_with(unique):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def sandbox_of(kind: str) -> dict[str, Any]:
    if kind == "unsandboxed":
        return UNSANDBOXED
    support = asyncio.run(probe())
    if not support.available:
        pytest.skip(f"no sandbox on this machine: {support.reason}")
    return {"enabled": True}


def test_run_stops_its_background_commands_when_its_turn_ends(
    isolated: Path, fake_llm: FakeOpenAI, nap: str
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    gate = threading.Event()
    fake_llm.script(
        background(f"sleep {nap} & setsid sleep {nap} >/dev/null 2>&1 & wait"),
        Gated(Text("left them running"), gate),
    )
    run = agent_tui(isolated, "run", "start two sleeps")
    try:
        wait_until(lambda: len(processes_with(nap)) == 2, "both sleeps run")
        gate.set()
        _, err = run.communicate(timeout=120)
    finally:
        gate.set()
        run.kill()
    assert run.returncode == 0, err.decode()
    assert processes_with(nap) == [], "a background command outlived agent-tui run"


@pytest.mark.parametrize("kind", ["unsandboxed", "sandboxed"])
def test_a_sigkilled_run_leaves_no_background_process(
    isolated: Path, fake_llm: FakeOpenAI, nap: str, kind: str
) -> None:
    write_config(isolated, fake_llm, sandbox=sandbox_of(kind))
    fake_llm.script(
        background(f"sleep {nap} & setsid sleep {nap} >/dev/null 2>&1 & wait"),
        Hang(delay=60),  # the turn goes on: agent-tui is killed in it
    )
    run = agent_tui(isolated, "run", "start two sleeps")
    try:
        wait_until(lambda: len(processes_with(nap)) == 2, "both sleeps run")
        run.kill()  # SIGKILL: agent-tui cleans nothing up, and nothing starts after it
        run.communicate(timeout=30)
        # Its supervisor sees agent-tui's end (a pipe closes): no next start is needed.
        wait_until(lambda: processes_with(nap) == [], "the background processes end", 30)
    finally:
        run.kill()


def test_hooks_hear_claude_code_s_names_and_the_background_id(
    configured: FakeOpenAI, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hook = Hook(tmp_path)
    person_config(
        {
            "hooks": {
                "PreToolUse": [hook.entry(matcher="BashOutput|KillShell")],  # former names
                "PostToolUse": [hook.entry(matcher="Bash")],
            }
        }
    )
    configured.script(
        background("echo hi"),
        ToolCalls(
            [
                Call("task_output", json.dumps({"task_id": "b000000", "block": False})),
                Call("task_stop", json.dumps({"task_id": "b000000"})),
            ]
        ),
        Text("done"),
    )
    code, _, err = run_cli(capsys, "run", "go")
    assert code == 0, err
    started, read, stop = hook.events()
    assert started["tool_name"] == "Bash" and started["tool_input"]["run_in_background"]
    assert started["tool_response"]["backgroundTaskId"].startswith("b")
    assert (read["tool_name"], read["tool_input"]["task_id"]) == ("TaskOutput", "b000000")
    assert stop["tool_name"] == "TaskStop"


def test_the_app_s_quit_stops_its_background_commands(
    isolated: Path, fake_llm: FakeOpenAI, nap: str
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)

    def respond(body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Text("A title")  # the session's title, asked without tools
        if any(m["role"] == "tool" for m in body["messages"]):
            return Text("It sleeps in the background.")
        return background(f"sleep {nap}")

    fake_llm.responder = respond
    app = PtyAgent(isolated)
    try:
        app.wait_for(b"100,000 tokens")  # the session is open
        app.type(b"start a sleep\r")
        app.wait_for(b"It sleeps in the background.")
        wait_until(lambda: processes_with(nap), "the sleep runs")
    finally:
        code = app.quit()
    assert code == 0
    assert processes_with(nap) == [], "a background command outlived the app"
