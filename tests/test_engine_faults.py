"""The warm engine, honest (issue 50, docs/engine.md): `agent-tui engine --stop` lets the
turns under way finish (`--now` cuts them, and those commands say they were stopped); a
connection reset never prints a thread's traceback; where no engine can run (Unix
sockets refused, a runtime folder that is not the person's, a missing
AGENT_TUI_RUNTIME_DIR) each command has a provider process of its own and
`agent-tui engine` says why."""

from __future__ import annotations

import asyncio
import json
import os
import re
import select
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_tui.errors import ProviderError
from agent_tui.provider import remote, shared
from tests.engine_helpers import run_cli
from tests.fake_openai import Call, FakeOpenAI, Gated, Reply, Text, ToolCalls
from tests.process_helpers import ROOT, Run, wait_until
from tests.test_engine import run

NOBODY = 65534

REFUSE_UNIX_SOCKETS = """\
import socket

_socket = socket.socket


class _Refused(_socket):
    # What a seccomp filter that denies AF_UNIX does to socket(): socketpair's wrapping
    # of descriptors it already has (asyncio's own wake-up pair) still works.
    def __init__(self, family=-1, type=-1, proto=-1, fileno=None):
        if family == socket.AF_UNIX and fileno is None:
            raise PermissionError(1, "Operation not permitted")
        super().__init__(family, type, proto, fileno)


socket.socket = _Refused
"""


def engine_status(project: Path) -> list[dict[str, Any]]:
    return json.loads(run(project, "engine", "--json").stdout)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def by_last_message(body: dict[str, Any]) -> Reply:
    """The answer after the first turn's tool ran, or to another command's question."""
    last = body["messages"][-1]
    return Text("first turn done") if last["role"] == "tool" else Text("the other's answer")


def test_engine_stop_lets_the_turn_under_way_finish_and_new_commands_use_a_new_engine(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    gate = threading.Event()
    step = ToolCalls([Call("bash", json.dumps({"command": "echo step-one"}))])
    configured.script(Gated(step, gate))
    configured.responder = by_last_message
    first = Run(isolated, "run", "go")
    try:
        configured.wait_for_requests(1, timeout=120)  # its first step is under way
        (engine,) = engine_status(isolated)
        assert len(engine["busy"]) == 1, engine
        shown = run(isolated, "engine").stdout
        assert re.search(r"runs, 1 command \(pid \d+\) mid-turn", shown), shown

        stopping = run(isolated, "engine", "--stop").stdout
        assert re.search(
            r"takes no new command and stops once 1 command \(pid \d+\) mid-turn finishes",
            stopping,
        ), stopping
        assert "agent-tui engine --stop --now" in stopping, stopping
        old = int(engine["pid"])
        assert alive(old) and shared.engines() == []  # still finishing; found by no one

        other = run(isolated, "run", "meanwhile")  # a new engine answers it
        assert other.returncode == 0 and "the other's answer" in other.stdout, other.stderr
        (new,) = engine_status(isolated)
        assert new["pid"] != old

        gate.set()
        code, out, err = first.finish()
    finally:
        gate.set()
        if first.process.poll() is None:
            first.kill()
    # The turn went on to its end: its second step after the old engine left.
    assert code == 0 and "first turn done" in out, err
    assert "warm engine" not in err and "Traceback" not in err, err
    wait_until(lambda: not alive(old), "the stopped engine to leave once its turn ended")


def test_engine_stop_now_cuts_the_turn_and_that_command_says_its_engine_was_stopped(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    gate = threading.Event()
    configured.script(Gated(Text("never sent"), gate, text="partly "))
    first = Run(isolated, "run", "go")
    try:
        configured.wait_for_requests(1, timeout=120)
        (engine,) = engine_status(isolated)
        stopped = run(isolated, "engine", "--stop", "--now").stdout
        assert re.search(r"stopped, cutting the turn of 1 command \(pid \d+\)", stopped), stopped
        code, _, err = first.finish()
    finally:
        gate.set()
        if first.process.poll() is None:
            first.kill()
    assert code == 1, err
    assert "warm engine was stopped (`agent-tui engine --stop --now`)" in err, err
    assert "unexpectedly" not in err and "exit status" not in err, err
    assert "Traceback" not in err and "Exception in thread" not in err, err
    assert not alive(int(engine["pid"]))


async def test_a_reset_connection_is_one_error_line_and_never_a_thread_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thread_errors: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", thread_errors.append)
    ours, engine = socket.socketpair()
    process = remote.ProviderProcess(connection=ours)
    try:
        asked = asyncio.create_task(process.validate_environment("openai/test-model"))
        # The request reached the engine's end, unread: closing it now resets ours.
        assert await asyncio.to_thread(select.select, [engine], [], [], 60) != ([], [], [])
        engine.close()
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(asked, 60)
        await asyncio.to_thread(process._reader.join, 60)
    finally:
        process.close()
    message = str(caught.value)
    assert "its connection was reset" in message and "\n" not in message, message
    assert thread_errors == []


async def test_a_request_written_as_the_engine_left_goes_to_the_next_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The engine left with nothing of ours under way (`bye` finished): what we had just
    written is asked of a new engine, not lost (an app left open across `--stop`)."""
    ours, old = socket.socketpair()
    theirs, new = socket.socketpair()
    monkeypatch.setattr(shared, "idle_minutes", lambda: 10.0)
    monkeypatch.setattr(shared, "connect_or_start", lambda idle: theirs)

    def leaving() -> None:  # read it, then leave without answering
        old.makefile("rb").readline()
        old.sendall(b'{"bye": "finished"}\n')
        old.close()

    def answering() -> None:
        with new.makefile("rwb") as stream:
            asked = json.loads(stream.readline())
            stream.write(json.dumps({"id": asked["id"], "ok": {"asked": asked["args"]}}).encode())
            stream.write(b"\n")
            stream.flush()

    engines = [threading.Thread(target=leaving), threading.Thread(target=answering)]
    for engine in engines:
        engine.start()
    process = remote.ProviderProcess(connection=ours)
    try:
        answer = await asyncio.wait_for(process.validate_environment("openai/test-model"), 60)
    finally:
        process.close()
        for engine in engines:
            engine.join(60)
        new.close()
    assert answer == {"asked": ["openai/test-model"]}


def test_where_unix_sockets_are_refused_a_command_answers_with_its_own_provider_process(
    configured: FakeOpenAI, isolated: Path, runtime: Path, tmp_path: Path
) -> None:
    hook = tmp_path / "seccomp-like"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(REFUSE_UNIX_SOCKETS, encoding="utf-8")
    refused = {"PYTHONPATH": f"{hook}{os.pathsep}{ROOT}"}
    configured.script(Text("answered all the same"))
    done = run(isolated, "run", "go", **refused)
    assert done.returncode == 0 and "answered all the same" in done.stdout, done.stderr
    assert list(runtime.rglob("engine-*.sock")) == []
    shown = run(isolated, "engine", **refused).stdout
    assert "No warm engine runs here: Unix sockets are refused here (PermissionError" in shown
    assert "provider process of its own" in shown, shown


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A folder with a short path: under a long one (pytest's), the runtime folder would
    be another, in /tmp (a socket's path must fit in ~107 bytes: shared.MAX_FOLDER)."""
    folder = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _runtime_folder(short_tmp: Path, case: str) -> tuple[Path, str]:
    """AGENT_TUI_RUNTIME_DIR for `case`, and what `agent-tui engine` says of it."""
    base = short_tmp / "runtime"
    folder = base / f"agent-tui-{os.getuid()}"
    if case == "missing":
        return base, f"{shared.RUNTIME_ENV} is {base}, which is not an existing folder"
    folder.mkdir(parents=True)
    if case == "open to others":
        folder.chmod(0o755)
        return base, f"{folder} is open to other users (mode 0755, not 0700)"
    if os.geteuid() != 0:
        pytest.skip("needs root to make a folder another user's")
    os.chown(folder, NOBODY, NOBODY)  # another user made it first
    return base, f"{folder} belongs to another user (uid {NOBODY})"


@pytest.mark.parametrize("case", ["missing", "open to others", "another user's"])
def test_a_runtime_folder_not_the_persons_means_no_engine_and_engine_says_why(
    case: str,
    short_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, why = _runtime_folder(short_tmp, case)
    monkeypatch.setenv(shared.RUNTIME_ENV, str(base))
    monkeypatch.setenv(shared.ENGINE_ENV, "10")
    monkeypatch.setattr(remote, "_no_engine", "")
    assert remote._shared_engine() is None  # the command starts a provider process of its own
    assert remote._no_engine == why
    code, out, _ = run_cli(capsys, "engine")
    assert code == 0 and f"No warm engine runs here: {why}." in out, out
    folder = base / f"agent-tui-{os.getuid()}"
    assert not base.exists() if case == "missing" else list(base.rglob("*")) == [folder]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder another user's")
def test_a_command_beside_a_squatted_runtime_folder_answers_with_its_own_provider_process(
    configured: FakeOpenAI, isolated: Path, short_tmp: Path
) -> None:
    base, why = _runtime_folder(short_tmp, "another user's")
    configured.script(Text("answered all the same"))
    done = run(isolated, "run", "go", **{shared.RUNTIME_ENV: str(base)})
    assert done.returncode == 0 and "answered all the same" in done.stdout, done.stderr
    assert list((base / f"agent-tui-{os.getuid()}").iterdir()) == []  # nothing of ours in it
    shown = run(isolated, "engine", **{shared.RUNTIME_ENV: str(base)}).stdout
    assert why in shown, shown
