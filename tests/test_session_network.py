"""A session's sandboxed commands share one loopback-only network (sandbox.network off):
a dev server the model starts in the background answers the session's later commands,
and nothing else — another session's commands, this machine's own listeners — is
reachable. Real bubblewrap, real processes, the fake provider; what the model reads is
asserted in the requests the fake server received."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shlex
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_tui import procs
from agent_tui.events import Event, Notice
from agent_tui.sandbox.session_network import NSENTER_ENV
from agent_tui.session.sending import run_shell
from agent_tui.tool.bash import OWN_NETWORK_NOTE, SHARED_NETWORK_NOTE
from tests.conftest import write_config
from tests.engine_helpers import open_engine, tool_results
from tests.fake_openai import Call, FakeOpenAI, Gated, Reply, Text, ToolCalls
from tests.test_background_commands import Changes, processes_with, until
from tests.test_sandbox import require_bwrap, sandboxed  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(not procs.LINUX, reason="namespaces and /proc need Linux")

PY = sys.executable
NETNS = re.compile(r"net:\[(\d+)\]")


def bash(command: str, **extra: Any) -> Call:
    return Call("bash", json.dumps({"command": command, **extra}))


def fetch(port: int | str) -> str:
    """A command that prints the HTTP status of 127.0.0.1:port, or the error's name."""
    code = (
        "import urllib.request as u\n"
        f"try: print('status', u.urlopen('http://127.0.0.1:{port}/', timeout=5).status)\n"
        "except Exception as e: print('failed', type(e).__name__, e)"
    )
    return f"{PY} -c {shlex.quote(code)}"


def connect(port: int) -> str:
    code = (
        "import socket\n"
        f"try: socket.create_connection(('127.0.0.1', {port}), 5); print('connected')\n"
        "except OSError as e: print('refused', type(e).__name__)"
    )
    return f"{PY} -c {shlex.quote(code)}"


def in_netns(inode: int) -> list[int]:
    """Live processes whose network namespace is this one."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if (entry / "ns" / "net").readlink().name == f"net:[{inode}]":
                    found.append(int(entry.name))
    return found


def held_here(inode: int) -> list[str]:
    """This process's descriptors of that namespace (agent-tui's hold on it)."""
    found = []
    for entry in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):
            if entry.readlink().name == f"net:[{inode}]":
                found.append(entry.name)
    return found


def cmdline(pid: int) -> list[bytes]:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    return []


class Notices:
    def __init__(self, subscribe: Callable[[Callable[[Event], None]], Any]) -> None:
        self.seen: list[str] = []
        subscribe(self._on)

    def _on(self, event: Event) -> None:
        if isinstance(event, Notice):
            self.seen.append(event.message)


async def start_server(
    fake_llm: FakeOpenAI,
    project: Path,
    engine: Any,
    later: list[Call],
    gate: threading.Event,
    after: tuple[Reply, ...] = (Text("checked it"),),
) -> tuple[str, str, Any, asyncio.Task[Any]]:
    """The model starts `http.server 0` in the background; `later` are its next calls,
    held until `gate`, then `after`. (session id, port, changes, the turn)."""
    served = project / "served"  # a unique argument: its processes are found by it
    served.mkdir()
    server = f"{PY} -u -m http.server 0 --bind 127.0.0.1 --directory {served}"
    fake_llm.script(
        ToolCalls([bash(server, run_in_background=True, description="a dev server")]),
        Gated(ToolCalls(later), gate),
        *after,
    )
    changes = Changes(engine)
    session = await engine.new_session(project)
    turn = asyncio.create_task(engine.prompt(session.id, "start a server and check it"))
    started = await until(changes.newest, "the command is announced")
    saved = Path(started["output_path"])
    port = await until(
        lambda: re.search(r"port (\d+)", saved.read_text() if saved.is_file() else ""),
        "the server says its port",
    )
    return session.id, port[1], started, turn


async def test_a_background_server_answers_the_session_s_later_commands_only(
    sandboxed: Path,  # noqa: F811
    fake_llm: FakeOpenAI,
) -> None:
    project = sandboxed
    host = socket.create_server(("127.0.0.1", 0))  # this machine's own loopback
    host.setblocking(False)
    read, probe, gate = Call("task_output"), bash(""), threading.Event()
    async with open_engine() as engine:
        notices = Notices(engine.subscribe)
        session_id, port, started, turn = await start_server(
            fake_llm, project, engine, [read, probe], gate
        )
        read.arguments = json.dumps({"task_id": started["id"], "block": False})
        probe.arguments = json.dumps(
            {"command": f"{fetch(port)}; {connect(host.getsockname()[1])}; "
             "readlink /proc/self/ns/net"}
        )  # fmt: skip
        gate.set()
        result = await turn
        assert result is not None and result.outcome == "stop", result
        reading, probed = tool_results(fake_llm.requests[2])[-2:]
        inode = int(NETNS.search(probed)[1])
        inside = in_netns(inode)
        # Only the server's own processes hold the namespace: no holder was left.
        assert inside and all(b"--block-fd" not in cmdline(pid) for pid in inside)
        assert held_here(inode)
        shell = await run_shell(await engine.scope(session_id), fetch(port))  # `!command`
        fake_llm.script(ToolCalls([bash(fetch(port))]), Text("tried"))
        other = await engine.new_session(project)
        await engine.prompt(other.id, "try the first session's server")
        from_other = tool_results(fake_llm.requests[-1])[-1]
    host.close()
    assert SHARED_NETWORK_NOTE in tool_results(fake_llm.requests[1])[-1]
    assert f"port {port}" in reading  # read with task_output
    assert "status 200" in probed, probed  # a later step of the same session reaches it
    assert "refused" in probed and "connected" not in probed  # not this machine's listener
    assert "status 200" in shell.state.output  # type: ignore[union-attr]
    assert "failed" in from_other and "status" not in from_other  # not another session
    assert not any("not reachable" in line for line in notices.seen)
    assert in_netns(inode) == [], "a process outlived the engine in the session's network"
    assert held_here(inode) == [], "the engine closed, but agent-tui still holds the network"
    assert processes_with(str(project / "served")) == []


async def test_a_subagent_s_commands_reach_its_caller_s_server(
    sandboxed: Path,  # noqa: F811
    fake_llm: FakeOpenAI,
) -> None:
    """A subagent checks the server its caller started: it works in the caller's network."""
    write_config(sandboxed, fake_llm, agent={"runner": {"tools": ["bash"]}})
    task = {"description": "Check it", "prompt": "check the server", "agent": "runner"}
    probe, gate = bash(""), threading.Event()
    async with open_engine() as engine:
        _, port, _, turn = await start_server(
            fake_llm,
            sandboxed,
            engine,
            [Call("task", json.dumps(task))],
            gate,
            (ToolCalls([probe]), Text("it answers"), Text("done")),
        )
        probe.arguments = json.dumps({"command": fetch(port)})
        gate.set()
        await turn
    assert "status 200" in tool_results(fake_llm.requests[3])[-1]


async def test_plan_mode_commands_keep_a_network_of_their_own(
    sandboxed: Path,  # noqa: F811
    fake_llm: FakeOpenAI,
) -> None:
    """A read-only command must not reach a server that writes (a dev server with the
    project's database): plan mode's commands do not join the session's network."""
    project = sandboxed
    write_config(project, fake_llm, agent={"plan": {"permission": {"bash": "allow"}}})
    probe, gate = bash(""), threading.Event()
    async with open_engine() as engine:
        session_id, port, _, turn = await start_server(fake_llm, project, engine, [probe], gate)
        probe.arguments = json.dumps({"command": fetch(port)})
        gate.set()
        await turn
        fake_llm.script(ToolCalls([bash(fetch(port))]), Text("tried"))
        await engine.prompt(session_id, "check it while planning", agent="plan")
        planned = tool_results(fake_llm.requests[-1])[-1]
    assert "status 200" in tool_results(fake_llm.requests[2])[-1]
    assert "failed" in planned and "status" not in planned, planned


async def test_where_it_cannot_be_shared_commands_keep_their_own_and_the_person_is_told(
    sandboxed: Path,  # noqa: F811
    fake_llm: FakeOpenAI,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(NSENTER_ENV, str(sandboxed / "no-nsenter-here"))
    probe, gate = bash(""), threading.Event()
    async with open_engine() as engine:
        notices = Notices(engine.subscribe)
        _, port, _, turn = await start_server(fake_llm, sandboxed, engine, [probe], gate)
        probe.arguments = json.dumps({"command": fetch(port)})
        gate.set()
        await turn
    started, probed = tool_results(fake_llm.requests[1])[-1], tool_results(fake_llm.requests[2])[-1]
    assert OWN_NETWORK_NOTE in started
    assert "failed" in probed and "status" not in probed  # today's --unshare-net
    told = [line for line in notices.seen if "not reachable from later commands" in line]
    assert len(told) == 1 and "nsenter" in told[0], notices.seen
