"""The person's side of background commands in the app (issue 53): the sidebar lists the
shown session's (command, running time or how it ended, last line), `/bashes` lists them
and stops one, and Ctrl+B sends the running foreground bash command to the background —
the model gets its answer at once while the same process goes on. Real processes, the
fake provider, Pilot; every wait is for a state."""

from __future__ import annotations

import json
import re
import secrets
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Static

from agent_tui import procs
from agent_tui.command.backgrounding import EMPTY
from agent_tui.events import Event, PartUpdated
from agent_tui.records import ToolPart, ToolStateRunning
from agent_tui.tui.app import AgentApp
from agent_tui.tui.choice_screen import RowsScreen
from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.tool_line import ToolLine
from tests.conftest import write_config
from tests.fake_openai import Call, FakeOpenAI, Gated, Text, ToolCalls
from tests.test_background_commands import background, processes_with, user_texts
from tests.tui_helpers import open_app, type_and_send, wait_for

pytestmark = pytest.mark.skipif(not procs.LINUX, reason="the /proc checks need Linux")

SIZE = (120, 40)
UNSANDBOXED = {"enabled": False}
WAITER = """import pathlib, sys, time
print("ready-line", flush=True)
while not pathlib.Path(sys.argv[1]).exists():
    time.sleep(0.02)
print("finished-line", flush=True)
"""
"""Prints a line, then waits for the file its argument names, then prints and exits."""
TICKER = """import itertools, sys, time
for n in itertools.count():
    print(f"tick {n}", flush=True)
    time.sleep(0.05)
"""


def _script(folder: Path, name: str, text: str) -> Path:
    """The script, and `./py` beside it (Python under a short name: the sidebar shows a
    command's start)."""
    path = folder / name
    path.write_text(text)
    if not (folder / "py").exists():
        (folder / "py").symlink_to(sys.executable)
    return path


def _sidebar(app: AgentApp) -> str:
    """The sidebar's Background section, '' while it is hidden."""
    sidebar = app.chat.sidebar
    if not sidebar.has_class("-has-background"):
        return ""
    return str(sidebar.query_one("#sidebar-background", Static).render())


async def test_the_sidebar_follows_a_background_command_to_its_end(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    waiter, go = _script(isolated, "waiter.py", WAITER), isolated / "go"
    fake_llm.script(background(f"./py -u {waiter.name} {go}"), Text("it runs"))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        assert _sidebar(app) == ""  # no background command: no section
        await type_and_send(pilot, "start the waiter")
        await wait_for(pilot, lambda: "ready-line" in _sidebar(app), "its last line")
        shown = _sidebar(app)
        assert "◐" in shown and "waiter.py" in shown and "running" in shown
        session = app.chat.session
        assert session is not None

        await pilot.press("ctrl+x", "n")  # another session has none: the section goes
        await wait_for(pilot, lambda: app.chat.session is None, "a new session")
        assert _sidebar(app) == ""
        await app.chat.show_session(session)  # back: its list again
        assert "waiter.py" in _sidebar(app)

        go.touch()  # it prints its last line and exits
        await wait_for(pilot, lambda: "exit 0" in _sidebar(app), "its end shown")
        shown = _sidebar(app)
        assert "finished-line" in shown and "running" not in shown and "●" in shown
    await app.db.close()


async def test_bashes_lists_them_and_stops_one_and_the_model_hears_of_it(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    waiter, never = _script(isolated, "waiter.py", WAITER), isolated / "never"
    fake_llm.script(background(f"./py -u {waiter.name} {never}"), Text("it runs"), Text("noted"))
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await type_and_send(pilot, "/bashes")  # a new session: none
        await wait_for(pilot, lambda: any(n.message == EMPTY for n in app._notifications))
        await type_and_send(pilot, "start the waiter")
        await wait_for(pilot, lambda: "ready-line" in _sidebar(app), "it runs")
        await wait_for(pilot, lambda: app.chat.status == "idle", "the turn's end")
        assert processes_with(str(never))

        await type_and_send(pilot, "/bashes")
        await wait_for(pilot, lambda: isinstance(app.screen, RowsScreen), "the list")
        (row,) = app.screen.rows
        assert "waiter.py" in row.label and row.detail.startswith("running")
        assert "ready-line" in row.detail and row.current
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the question")
        await pilot.press("y")
        await wait_for(pilot, lambda: not processes_with(str(never)), "the process gone")
        await wait_for(pilot, lambda: "stopped" in _sidebar(app), "shown stopped")

        await type_and_send(pilot, "/bashes")  # an ended one: listed, nothing to stop
        await wait_for(pilot, lambda: isinstance(app.screen, RowsScreen), "the list again")
        assert app.screen.rows[0].detail.startswith("stopped after")
        await pilot.press("escape")

        sent = len(fake_llm.requests)
        await type_and_send(pilot, "what happened?")
        await wait_for(pilot, lambda: len(fake_llm.requests) > sent, "the next request")
        await wait_for(pilot, lambda: app.chat.status == "idle", "answered")
    told = user_texts(fake_llm.requests[-1])
    assert "<task-notification>" in told and "was stopped by the person" in told
    await app.db.close()


def _running_output(seen: list[Event]) -> str:
    """What the running bash call showed so far (its live output), '' before any."""
    for event in reversed(seen):
        part = event.part if isinstance(event, PartUpdated) else None
        if isinstance(part, ToolPart) and isinstance(part.state, ToolStateRunning):
            return str(part.state.metadata.get("output", ""))
    return ""


def _tool_results(request: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in request["messages"] if m["role"] == "tool"]


async def test_ctrl_b_sends_the_running_command_to_the_background(
    isolated: Path, fake_llm: FakeOpenAI
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    ticker = _script(isolated, f"ticker_{secrets.token_hex(4)}.py", TICKER)  # found by name
    command = json.dumps({"command": f"./py -u {ticker.name}", "timeout": 600_000})
    read, gate = Call("task_output"), threading.Event()
    fake_llm.script(
        ToolCalls([Call("bash", command)]), Gated(ToolCalls([read]), gate), Text("read it")
    )
    app = await open_app()
    async with app.run_test(size=SIZE) as pilot:
        await app.loaded.wait()
        await pilot.press("ctrl+b")  # nothing runs yet: said so
        await wait_for(
            pilot, lambda: any("No command" in str(n.message) for n in app._notifications)
        )
        seen: list[Event] = []
        app.engine.subscribe(seen.append)
        await type_and_send(pilot, "run the ticker")
        await wait_for(pilot, lambda: "tick 0" in _running_output(seen), "its first line")
        (pid,) = processes_with(ticker.name)
        assert len(fake_llm.requests) == 1  # the model waits for the command
        line = app.query_one(ToolLine)  # it names the key while it runs
        await wait_for(pilot, lambda: "ctrl+b: to the background" in str(line.title), "hint")

        await pilot.press("ctrl+b")  # while the turn runs
        await wait_for(pilot, lambda: len(fake_llm.requests) == 2, "the result reached the model")
        assert processes_with(ticker.name) == [pid]  # the same process, still running
        await wait_for(pilot, lambda: "to the background" not in str(line.title), "ended")
        (result,) = _tool_results(fake_llm.requests[1])
        task_id = re.search(r"ID: (b[0-9a-f]+)", result).group(1)  # type: ignore[union-attr]
        assert "tick 0" in result and "Output is being written to" in result
        session = app.chat.session
        assert session is not None
        commands = app.engine.live(session.id).background
        found = commands.get(task_id)
        await wait_for(pilot, lambda: found.output.total_bytes > 0, "its later output")
        assert found.running and "ticker_" in _sidebar(app) and "tick " in _sidebar(app)

        read.arguments = json.dumps({"task_id": task_id, "block": False})
        gate.set()  # the model reads it with task_output
        await wait_for(pilot, lambda: len(fake_llm.requests) == 3, "the read")
        await wait_for(pilot, lambda: app.chat.status == "idle", "the turn's end")
        (_, read_result) = _tool_results(fake_llm.requests[2])
        assert "<status>running</status>" in read_result
        assert re.search(r"tick [1-9]\d*", read_result), read_result
        assert processes_with(ticker.name) == [pid]
    await app.engine.close("prompt_input_exit")  # as the app's launch does when it quits
    assert not processes_with(ticker.name)
    await app.db.close()
