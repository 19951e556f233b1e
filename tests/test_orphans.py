"""No process a tool started outlives agent-tui: real `agent-tui run` processes, real
bash children, real signals (procs.py).

These run commands unsandboxed: they check procs.py's own net (process groups, the owner
marker), which is what holds where no sandbox can be; in the sandbox its PID namespace
ends everything with the command (tests/test_sandbox.py)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_tui import procs
from tests.conftest import write_config
from tests.fake_openai import Call, FakeOpenAI, Hang, Text, ToolCalls
from tests.process_helpers import agent_tui, wait_until

pytestmark = pytest.mark.skipif(not procs.LINUX, reason="the /proc checks need Linux")

UNSANDBOXED = {"enabled": False}


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper has ended)."""
    stat = procs._stat(pid)
    return stat is not None and stat[0] != "Z"


def read_pid(path: Path) -> int:
    wait_until(lambda: path.is_file() and path.read_text().strip(), f"{path} written")
    return int(path.read_text().strip())


@pytest.fixture
def owners() -> Iterator[list[int]]:
    """The agent-tui processes a test started: at the end, anything still running that
    one of them started (found by its marker, so never a reused pid) is killed."""
    pids: list[int] = []
    yield pids
    started = {str(pid) for pid in pids}
    for found in procs.scan(lambda owner: owner.split("-")[0] in started):
        with contextlib.suppress(OSError):
            os.kill(found.pid, signal.SIGKILL)


def bash_call(command: str) -> ToolCalls:
    return ToolCalls([Call("bash", json.dumps({"command": command}))])


def test_background_jobs_end_with_run(
    isolated: Path, fake_llm: FakeOpenAI, owners: list[int]
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    # One job stays in the command's group, one leaves it with setsid.
    fake_llm.script(
        bash_call(
            "sleep 300 >/dev/null 2>&1 & echo $! > job.pid; "
            "setsid sleep 300 >/dev/null 2>&1 & echo $! > escaped.pid"
        ),
        Text("started them"),
    )
    run = agent_tui(isolated, "run", "start a server")
    owners.append(run.pid)
    _, err = run.communicate(timeout=60)
    assert run.returncode == 0, err.decode()
    job, escaped = read_pid(isolated / "job.pid"), read_pid(isolated / "escaped.pid")
    assert not alive(job), "the background job outlived agent-tui run"
    assert not alive(escaped), "the setsid job outlived agent-tui run"


def test_sigkilled_agent_children_are_reaped_at_next_start(
    isolated: Path, fake_llm: FakeOpenAI, owners: list[int]
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    fake_llm.script(
        bash_call("sleep 300 >/dev/null 2>&1 & echo $! > job.pid; echo $$ > shell.pid; sleep 300"),
        Hang(delay=60),
    )
    stranger = subprocess.Popen(  # same name, not ours: must survive
        ["sleep", "300"],
        env={k: v for k, v in os.environ.items() if k != procs.OWNER_ENV},
        start_new_session=True,
    )
    # A process marked by a live agent-tui (this test process) is not an orphan either.
    live_owned = subprocess.Popen(
        ["sleep", "300"], env=procs.process_env(dict(os.environ)), start_new_session=True
    )
    victim = agent_tui(isolated, "run", "run something long")
    owners.append(victim.pid)
    try:
        job, shell = read_pid(isolated / "job.pid"), read_pid(isolated / "shell.pid")
        victim.kill()  # SIGKILL: agent-tui gets no chance to clean up
        victim.communicate(timeout=30)
        assert alive(job) and alive(shell), "precondition: the children survived the SIGKILL"
        assert (procs._marker(job) or "").startswith(f"{victim.pid}-")  # marked as its own

        nxt = agent_tui(isolated, "sessions")  # any start reaps
        _, err = nxt.communicate(timeout=60)
        assert nxt.returncode == 0, err.decode()
        assert not alive(job), "the SIGKILLed agent's background job is still running"
        assert not alive(shell), "the SIGKILLed agent's shell is still running"
        assert alive(stranger.pid), "a process agent-tui did not start was killed"
        assert alive(live_owned.pid), "a process of a live agent-tui was killed"
    finally:
        with contextlib.suppress(OSError):
            victim.kill()
        for proc in (stranger, live_owned):
            proc.kill()
            proc.wait()


def test_sigterm_stops_children_before_dying(
    isolated: Path, fake_llm: FakeOpenAI, owners: list[int]
) -> None:
    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    fake_llm.script(
        bash_call("sleep 300 >/dev/null 2>&1 & echo $! > job.pid; sleep 300"), Hang(delay=60)
    )
    run = agent_tui(isolated, "run", "run something long")
    owners.append(run.pid)
    job = read_pid(isolated / "job.pid")
    run.send_signal(signal.SIGTERM)
    run.communicate(timeout=30)
    assert run.returncode == -signal.SIGTERM  # it still dies of the signal
    assert not alive(job), "SIGTERM left the background job running"


def marked(pid: int, timeout: float = 30.0) -> None:
    """Until the process's environment carries its marker: Popen returns once exec closed
    its error pipe, before the kernel has set the new environment up (a /proc read then
    finds it empty)."""
    deadline = time.monotonic() + timeout
    while procs.OWNER_ENV.encode() not in Path(f"/proc/{pid}/environ").read_bytes():
        assert time.monotonic() < deadline, f"process {pid} never showed its marker"
        time.sleep(0.01)


def test_reap_scan_ignores_live_owners_and_strangers() -> None:
    own = subprocess.Popen(
        ["sleep", "300"], env=procs.process_env(dict(os.environ)), start_new_session=True
    )
    scope = procs.owner_token().rpartition("~")[2]  # this data dir's
    dead_owner = subprocess.Popen(
        ["sleep", "300"],
        env={**os.environ, procs.OWNER_ENV: f"999999999-1~{scope}"},  # no such pid: dead
        start_new_session=True,
    )
    elsewhere = subprocess.Popen(  # dead too, but left with another data dir: not ours
        ["sleep", "300"],
        env={**os.environ, procs.OWNER_ENV: "999999999-1~0ther0ne"},
        start_new_session=True,
    )
    try:
        for proc in (own, dead_owner, elsewhere):
            marked(proc.pid)
        start = time.perf_counter()
        found = procs.scan(lambda owner: True)
        elapsed = time.perf_counter() - start
        pids = {f.pid for f in found}
        assert {own.pid, dead_owner.pid, elsewhere.pid} <= pids
        assert os.getpid() not in pids
        assert procs.reap_orphans(grace=2) >= 1
        dead_owner.wait(timeout=10)
        assert alive(own.pid) and alive(elsewhere.pid)
        print(f"/proc scan: {elapsed * 1000:.1f} ms over {len(os.listdir('/proc'))} entries")
    finally:
        for proc in (own, dead_owner, elsewhere):
            proc.kill()
            proc.wait()


def test_the_app_reaps_once_its_session_is_drawn(isolated: Path, fake_llm: FakeOpenAI) -> None:
    """The app's start reaps too, once its first frame is drawn (not on the way to it)."""
    from tests.pty_helpers import PtyAgent

    write_config(isolated, fake_llm, sandbox=UNSANDBOXED)
    scope = procs.owner_token().rpartition("~")[2]  # this data dir's
    orphan = subprocess.Popen(  # marked by an agent-tui that is gone
        ["sleep", "300"],
        env={**os.environ, procs.OWNER_ENV: f"999999999-1~{scope}"},
        start_new_session=True,
    )
    agent = PtyAgent(isolated)
    try:
        agent.wait_for(b"Message the agent")
        wait_until(lambda: orphan.poll() is not None, "the orphan reaped", timeout=60)
    finally:
        assert agent.quit() == 0
        with contextlib.suppress(OSError):
            orphan.kill()
        orphan.wait()
