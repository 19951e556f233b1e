"""The relay, honest (issue 50, docs/relay.md): `agent-tui relay --stop` lets the
turns under way finish (`--now` cuts them, and those commands say they were stopped); a
connection reset never prints a thread's traceback; where no relay can run (Unix
sockets refused, a runtime folder that is not the person's, a missing
AGENT_TUI_RUNTIME_DIR) each command has a provider process of its own and
`agent-tui relay` says why."""

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
from agent_tui.provider import relay, remote
from tests.engine_helpers import run_cli
from tests.fake_openai import Call, FakeOpenAI, Gated, Reply, Text, ToolCalls
from tests.process_helpers import Run, wait_until, with_sitecustomize
from tests.test_relay import run

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


def relay_status(project: Path) -> list[dict[str, Any]]:
    return json.loads(run(project, "relay", "--json").stdout)


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


def test_relay_stop_lets_the_turn_under_way_finish_and_new_commands_use_a_new_relay(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    gate = threading.Event()
    step = ToolCalls([Call("bash", json.dumps({"command": "echo step-one"}))])
    configured.script(Gated(step, gate))
    configured.responder = by_last_message
    first = Run(isolated, "run", "go")
    try:
        configured.wait_for_requests(1, timeout=120)  # its first step is under way
        (status,) = relay_status(isolated)
        assert len(status["busy"]) == 1, status
        shown = run(isolated, "relay").stdout
        assert re.search(r"runs, 1 command \(pid \d+\) mid-turn", shown), shown

        stopping = run(isolated, "relay", "--stop").stdout
        assert re.search(
            r"takes no new command and stops once 1 command \(pid \d+\) mid-turn finishes",
            stopping,
        ), stopping
        assert "agent-tui relay --stop --now" in stopping, stopping
        old = int(status["pid"])
        assert alive(old) and relay.relays() == []  # still finishing; found by no one

        other = run(isolated, "run", "meanwhile")  # a new relay answers it
        assert other.returncode == 0 and "the other's answer" in other.stdout, other.stderr
        (new,) = relay_status(isolated)
        assert new["pid"] != old

        gate.set()
        code, out, err = first.finish()
    finally:
        gate.set()
        if first.process.poll() is None:
            first.kill()
    # The turn went on to its end: its second step after the old relay left.
    assert code == 0 and "first turn done" in out, err
    assert "relay" not in err and "Traceback" not in err, err
    wait_until(lambda: not alive(old), "the stopped relay to leave once its turn ended")


def test_relay_stop_now_cuts_the_turn_and_that_command_says_its_relay_was_stopped(
    configured: FakeOpenAI, isolated: Path, runtime: Path
) -> None:
    gate = threading.Event()
    configured.script(Gated(Text("never sent"), gate, text="partly "))
    first = Run(isolated, "run", "go")
    try:
        configured.wait_for_requests(1, timeout=120)
        (status,) = relay_status(isolated)
        stopped = run(isolated, "relay", "--stop", "--now").stdout
        assert re.search(r"stopped, cutting the turn of 1 command \(pid \d+\)", stopped), stopped
        code, _, err = first.finish()
    finally:
        gate.set()
        if first.process.poll() is None:
            first.kill()
    assert code == 1, err
    assert "relay was stopped (`agent-tui relay --stop --now`)" in err, err
    assert "unexpectedly" not in err and "exit status" not in err, err
    assert "Traceback" not in err and "Exception in thread" not in err, err
    assert not alive(int(status["pid"]))


async def test_a_reset_connection_is_one_error_line_and_never_a_thread_traceback(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    thread_errors: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", thread_errors.append)
    ours, relay = socket.socketpair()
    process = remote.ProviderProcess(connection=ours)
    try:
        asked = asyncio.create_task(process.validate_environment("openai/test-model"))
        # The request reached the relay's end, unread: closing it now resets ours.
        assert await asyncio.to_thread(select.select, [relay], [], [], 60) != ([], [], [])
        relay.close()
        with pytest.raises(ProviderError) as caught:
            await asyncio.wait_for(asked, 60)
        await asyncio.to_thread(process._reader.join, 60)
    finally:
        process.close()
    message = str(caught.value)
    assert "its connection was reset" in message and "\n" not in message, message
    assert thread_errors == []


async def test_a_request_written_as_the_relay_left_goes_to_the_next_relay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The relay left with nothing of ours under way (`bye` finished): what we had just
    written is asked of a new relay, not lost (an app left open across `--stop`)."""
    ours, old = socket.socketpair()
    theirs, new = socket.socketpair()
    monkeypatch.setattr(relay, "idle_minutes", lambda: 10.0)
    monkeypatch.setattr(relay, "connect_or_start", lambda idle: theirs)

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

    threads = [threading.Thread(target=leaving), threading.Thread(target=answering)]
    for thread in threads:
        thread.start()
    process = remote.ProviderProcess(connection=ours)
    try:
        answer = await asyncio.wait_for(process.validate_environment("openai/test-model"), 60)
    finally:
        process.close()
        for thread in threads:
            thread.join(60)
        new.close()
    assert answer == {"asked": ["openai/test-model"]}


def test_where_unix_sockets_are_refused_a_command_answers_with_its_own_provider_process(
    configured: FakeOpenAI, isolated: Path, runtime: Path, tmp_path: Path
) -> None:
    refused = with_sitecustomize(tmp_path / "seccomp-like", REFUSE_UNIX_SOCKETS)
    configured.script(Text("answered all the same"))
    done = run(isolated, "run", "go", **refused)
    assert done.returncode == 0 and "answered all the same" in done.stdout, done.stderr
    assert list(runtime.rglob("relay-*.sock")) == []
    shown = run(isolated, "relay", **refused).stdout
    assert "No relay runs here: Unix sockets are refused here (PermissionError" in shown
    assert "provider process of its own" in shown, shown


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A folder with a short path: under a long one (pytest's), the runtime folder would
    be another, in /tmp (a socket's path must fit in ~107 bytes: relay.MAX_FOLDER)."""
    folder = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _runtime_folder(short_tmp: Path, case: str) -> tuple[Path, str]:
    """AGENT_TUI_RUNTIME_DIR for `case`, and what `agent-tui relay` says of it."""
    base = short_tmp / "runtime"
    folder = base / f"agent-tui-{os.getuid()}"
    if case == "missing":
        return base, f"{relay.RUNTIME_ENV} is {base}, which is not an existing folder"
    folder.mkdir(parents=True)
    if case == "open to others":
        folder.chmod(0o755)
        return base, f"{folder} is open to other users (mode 0755, not 0700)"
    if os.geteuid() != 0:
        pytest.skip("needs root to make a folder another user's")
    os.chown(folder, NOBODY, NOBODY)  # another user made it first
    return base, f"{folder} belongs to another user (uid {NOBODY})"


@pytest.mark.parametrize("case", ["missing", "open to others", "another user's"])
def test_a_runtime_folder_not_the_persons_means_no_relay_and_relay_says_why(
    case: str,
    short_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base, why = _runtime_folder(short_tmp, case)
    monkeypatch.setenv(relay.RUNTIME_ENV, str(base))
    monkeypatch.setenv(relay.RELAY_ENV, "10")
    monkeypatch.setattr(remote, "_no_relay", "")
    assert remote._on_relay() is None  # the command starts a provider process of its own
    assert remote._no_relay == why
    code, out, _ = run_cli(capsys, "relay")
    assert code == 0 and f"No relay runs here: {why}." in out, out
    folder = base / f"agent-tui-{os.getuid()}"
    assert not base.exists() if case == "missing" else list(base.rglob("*")) == [folder]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder another user's")
def test_a_command_beside_a_squatted_runtime_folder_answers_with_its_own_provider_process(
    configured: FakeOpenAI, isolated: Path, short_tmp: Path
) -> None:
    base, why = _runtime_folder(short_tmp, "another user's")
    configured.script(Text("answered all the same"))
    done = run(isolated, "run", "go", **{relay.RUNTIME_ENV: str(base)})
    assert done.returncode == 0 and "answered all the same" in done.stdout, done.stderr
    assert list((base / f"agent-tui-{os.getuid()}").iterdir()) == []  # nothing of ours in it
    shown = run(isolated, "relay", **{relay.RUNTIME_ENV: str(base)}).stdout
    assert why in shown, shown


# ---- the former spellings (docs/relay.md: "formerly `engine`") ---------------------------


def test_the_former_command_name_still_shows_the_relay(
    isolated: Path,
    short_tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv(relay.RUNTIME_ENV, str(short_tmp / "missing"))
    code, shown, _ = run_cli(capsys, "relay")
    assert code == 0 and "No relay runs here" in shown, shown
    assert run_cli(capsys, "engine") == (code, shown, "")


def test_the_former_environment_variable_is_read_when_the_new_one_is_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(relay.RELAY_ENV, raising=False)
    monkeypatch.setenv(relay.FORMER_ENV, "7")
    assert relay.idle_minutes() == 7.0
    monkeypatch.setenv(relay.FORMER_ENV, "0")
    assert relay.idle_minutes() == 0.0
    monkeypatch.setenv(relay.RELAY_ENV, "3")
    assert relay.idle_minutes() == 3.0


def test_the_former_config_key_still_sets_the_relay(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_tui.config.settings import Config
    from tests.conftest import person_config

    assert Config.model_validate({"engine": {"idle": 4}}).relay.idle == 4
    assert Config.model_validate({"relay": {"idle": 5}}).relay.idle == 5
    person_config({"engine": {"idle": 4}})
    monkeypatch.delenv(relay.RELAY_ENV, raising=False)
    monkeypatch.delenv(relay.FORMER_ENV, raising=False)
    assert relay.idle_minutes() == 4.0
