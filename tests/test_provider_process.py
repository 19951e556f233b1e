"""`agent-tui run` calls the model through a provider process of its own
(provider/worker.py): litellm's seconds-long import runs there, on the other core,
while the command opens its config, database and session. These drive the real
command as a subprocess against the fake OpenAI server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from agent_tui.provider import remote
from tests.fake_openai import FakeOpenAI, Hang, Text
from tests.process_helpers import agent_tui_argv, python_argv
from tests.pty_helpers import PtyAgent
from tests.test_faults_crash import (
    REPO_ROOT,
    STARTUP_TIMEOUT,
    db_rows,
    read_until,
    reaped,
    spawn,
    wait_for,
)

WORKER = b"agent_tui.provider.worker"


pytestmark = pytest.mark.cold_start
"""About a command's own provider process, not the relay (test_relay.py is)."""


def provider_processes(parent: int) -> list[int]:
    """The provider processes `parent` started (children running the worker module)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and WORKER in cmdline:
            found.append(int(entry.name))
    return found


def gone(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z"


def run_with_importtime(project: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        **env,
    }
    return subprocess.run(
        agent_tui_argv(*argv, python=("-X", "importtime")),
        cwd=project,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def imported(stderr: str) -> set[str]:
    """Module names from `-X importtime` lines (this process's own, not its children's)."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_run_answers_without_importing_litellm_itself(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(Text("Hello from the provider process."))
    done = run_with_importtime(isolated, "run", "hello")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Hello from the provider process." in done.stdout
    modules = imported(done.stderr)
    assert "agent_tui.session.engine" in modules  # the trace is this process's
    assert not {m for m in modules if m == "litellm" or m.startswith("litellm.")}
    assert len(configured.requests) >= 1


def test_with_the_process_switched_off_litellm_is_imported_here(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(Text("Hello from this process."))
    done = run_with_importtime(isolated, "run", "hello", AGENT_TUI_PROVIDER_PROCESS="0")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Hello from this process." in done.stdout
    assert "litellm" in imported(done.stderr)


def test_the_provider_process_ends_with_the_command(configured: FakeOpenAI, isolated: Path) -> None:
    configured.script(Hang(text="partial", delay=60))
    with reaped(spawn(isolated, "run", "wait for it")) as proc:
        read_until(proc, b"partial", STARTUP_TIMEOUT)
        (worker,) = provider_processes(proc.pid)
        proc.send_signal(signal.SIGINT)  # Ctrl+C: the command stops the stream and exits
        proc.communicate(timeout=30)
        assert proc.returncode == 130
    wait_for(lambda: gone(worker), "the provider process to end with the command", 10)


def test_a_provider_process_that_dies_mid_stream_is_a_clear_error(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(Hang(text="the first half", delay=60))
    with reaped(spawn(isolated, "run", "tell me")) as proc:
        read_until(proc, b"the first half", STARTUP_TIMEOUT)
        (worker,) = provider_processes(proc.pid)
        os.kill(worker, signal.SIGKILL)  # as the OOM killer would
        _, stderr = proc.communicate(timeout=60)
    err = stderr.decode()
    assert proc.returncode == 1, err
    assert "Traceback" not in err
    assert "provider process (litellm) ended unexpectedly (signal 9)" in err
    texts = [
        json.loads(row[0])["text"] for row in db_rows("SELECT data FROM part WHERE type = 'text'")
    ]
    assert "the first half" in texts  # what streamed is kept
    assert len(configured.requests) == 1  # not retried: the process is gone, not the network


def workers_of_this_test() -> list[int]:
    """Provider processes anywhere whose environment is this test's data dir."""
    mine = f"AGENT_TUI_DATA_DIR={os.environ['AGENT_TUI_DATA_DIR']}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                WORKER in (entry / "cmdline").read_bytes()
                and mine in (entry / "environ").read_bytes().split(b"\0")
                and not gone(int(entry.name))
            ):
                found.append(int(entry.name))
        except (OSError, ValueError):
            continue
    return found


def test_a_no_provider_error_ends_the_provider_process_with_it(isolated: Path) -> None:
    """No key and no server: the message comes before litellm is needed, and the process
    started for it (still importing) ends with the command instead of outliving it."""
    with reaped(spawn(isolated, "run", "hello")) as proc:
        _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert "agent-tui:" in stderr.decode() and "Traceback" not in stderr.decode()
    assert workers_of_this_test() == []


def test_the_app_answers_through_a_provider_process_that_writes_to_a_log(
    configured: FakeOpenAI, isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app starts one too (tui/launch.py): litellm is never imported in the app's
    process, what the provider process prints goes to the data dir's provider.log (on
    the terminal it would break the screen), and it ends when the app quits."""
    monkeypatch.delenv(remote.DISABLE_ENV)  # the suite's are lazy (conftest); people's warm
    configured.responder = lambda body: Text("Answered by the provider process.")  # titles too
    agent = PtyAgent(isolated)
    try:
        agent.wait_for(b"100,000 tokens")
        (worker,) = provider_processes(agent.proc.pid)
        assert b"--warm" in (Path("/proc") / str(worker) / "cmdline").read_bytes()
        agent.type(b"hello\r")
        agent.wait_for(b"Answered by the provider process.")
        # litellm is pure Python, but its import loads fastuuid's native library,
        # which nothing else of the app loads: its absence shows litellm is not here.
        maps = (Path("/proc") / str(agent.proc.pid) / "maps").read_text()
        assert "fastuuid" not in maps, "litellm was imported in the app's process"
    finally:
        code = agent.quit()
    assert code == 0
    log = Path(os.environ["AGENT_TUI_DATA_DIR"]) / "provider.log"
    assert log.exists()
    wait_for(lambda: gone(worker), "the provider process to end with the app", 10)


def test_a_lazy_provider_process_imports_litellm_at_its_first_request(tmp_path: Path) -> None:
    """AGENT_TUI_PROVIDER_PROCESS=lazy (the suite's setting): the process serves at once and
    imports litellm only when a request needs it. Held here until released (test_no_waits'
    hook): an eager process would still be importing and answer nothing."""
    from tests.test_no_waits import HeldImport

    held = HeldImport(tmp_path)
    worker = subprocess.Popen(
        python_argv("-m", "agent_tui.provider.worker", "--lazy"),
        env={**os.environ, **held.env},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    assert worker.stdin is not None and worker.stdout is not None
    try:

        def ask(ident: int, name: str, *args: str) -> None:
            line = {"id": ident, "op": "call", "name": name, "args": list(args)}
            worker.stdin.write(json.dumps(line).encode() + b"\n")
            worker.stdin.flush()

        ask(1, "not_a_call")
        refused = json.loads(worker.stdout.readline())
        assert refused["id"] == 1 and "not a provider call" in json.dumps(refused["err"])
        assert not held.started.exists()  # it answered, and litellm is not being imported
        ask(2, "get_model_info", "gpt-4o")
        held.wait_started()
        held.release()
        info = json.loads(worker.stdout.readline())
        assert info["id"] == 2 and info["ok"]["max_input_tokens"] > 0
    finally:
        held.release()
        worker.stdin.close()  # its end of stdin ends it
        assert worker.wait(timeout=60) == 0
        worker.stdout.close()
