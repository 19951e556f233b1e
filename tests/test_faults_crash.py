"""Crashes of real `python -m agent_tui` processes: kill -9 mid-stream, mid-tool and
mid-compaction, Ctrl+C, and two processes on one database.

Each subprocess pays litellm's import (~5 s), so there are six of them in this file.
State is awaited on the child's stdout and on the database file, never with fixed sleeps.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import agent_tui
from agent_tui import paths
from agent_tui.step.messages import COMPACTION_QUESTION, INTERRUPTED_OUTPUT
from tests.conftest import write_config
from tests.engine_helpers import conversation, is_summary_request, run_cli, text_of, tool_pairs_ok
from tests.fake_openai import Call, FakeOpenAI, Gated, Hang, Text, ToolCalls
from tests.process_helpers import agent_tui_argv

REPO_ROOT = Path(agent_tui.__file__).resolve().parents[1]
STARTUP_TIMEOUT = 60.0  # litellm's import in a loaded CI machine
STATE_TIMEOUT = 5.0  # the flush interval is 50 ms


# ---- helpers ----------------------------------------------------------------------------


def spawn(project: Path, *argv: str) -> subprocess.Popen[bytes]:
    """`python -m agent_tui ARGV` in `project`, on the test's data and config dirs."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
        "AGENT_TUI_DATA_DIR": os.environ["AGENT_TUI_DATA_DIR"],
        "AGENT_TUI_CONFIG_DIR": os.environ["AGENT_TUI_CONFIG_DIR"],
        "PYTHONUNBUFFERED": "1",
    }
    return subprocess.Popen(
        agent_tui_argv(*argv),
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def read_until(proc: subprocess.Popen[bytes], needle: bytes, timeout: float) -> bytes:
    """The child's stdout up to and including `needle` (read without blocking forever)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"{needle!r} not on stdout after {timeout} s; got {seen!r}")
        readable, _, _ = select.select([fd], [], [], min(left, 0.5))
        if readable:
            chunk = os.read(fd, 65536)
            if not chunk:
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise AssertionError(f"child exited before {needle!r}: {seen!r}\n{err}")
            seen += chunk
    return seen


def db_rows(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Read the database read-only, as a second process would."""
    path = paths.database_path()
    if not path.exists():
        return []
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1)
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.OperationalError:  # schema not created yet
        return []
    finally:
        conn.close()


def wait_for(predicate: Callable[[], bool], what: str, timeout: float = STATE_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.02)


def part_saved(needle: str, part_type: str = "text") -> bool:
    return bool(
        db_rows("SELECT 1 FROM part WHERE type = ? AND instr(data, ?) > 0", (part_type, needle))
    )


def descendants(pid: int) -> list[int]:
    """Live processes below `pid` (read from /proc before it is killed)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


@contextlib.contextmanager
def reaped(proc: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """Never leave the child (or anything it started, by pid) running after the test."""
    started: set[int] = set()
    try:
        yield proc
    finally:
        if proc.poll() is None:
            started.update(descendants(proc.pid))
            proc.kill()
        proc.wait(timeout=30)
        for pid in started:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def kill9(proc: subprocess.Popen[bytes]) -> list[int]:
    """SIGKILL the child and everything it started; returns the killed descendants."""
    below = descendants(proc.pid)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    for pid in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return below


def sessions(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    code, out, _ = run_cli(capsys, "sessions", "--json")
    assert code == 0
    return json.loads(out)


def export_latest(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, _ = run_cli(capsys, "export", sessions(capsys)[0]["id"])
    assert code == 0
    return json.loads(out)


# ---- kill -9 ----------------------------------------------------------------------------


def test_kill_9_mid_stream_keeps_the_text_and_continue_works(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Hang(text="partial answer", delay=60))
    with reaped(spawn(isolated, "run", "tell me everything")) as proc:
        read_until(proc, b"partial answer", STARTUP_TIMEOUT)
        wait_for(lambda: part_saved("partial answer"), "the streamed text in the database")
        kill9(proc)

    configured.script(Text("recovered"))
    code, out, err = run_cli(capsys, "run", "--continue", "next question")
    assert code == 0, err
    assert "recovered" in out
    conv = conversation(configured.requests[-1])
    assert [m["role"] for m in conv] == ["user", "assistant", "user"]
    assert text_of(conv[1]) == "partial answer"
    assert text_of(conv[2]) == "next question"

    crashed = next(m for m in export_latest(capsys)["messages"] if m["info"]["role"] == "assistant")
    assert crashed["info"]["error"]["kind"] in ("interrupted", "aborted")
    assert crashed["info"]["completed"] is not None
    texts = [p["text"] for p in crashed["parts"] if p["type"] == "text"]
    assert texts == ["partial answer"]


def test_kill_9_mid_tool_turns_the_call_into_an_interrupted_result(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Unsandboxed: the test finds the command among the agent's host children (in the
    # sandbox its own PID namespace ends it with the agent: tests/test_sandbox.py).
    write_config(isolated, configured, sandbox={"enabled": False})
    configured.script(ToolCalls([Call("bash", '{"command": "echo started; sleep 60"}')]))
    with reaped(spawn(isolated, "run", "run the slow thing")) as proc:
        wait_for(
            lambda: part_saved('"status":"running"', "tool"),
            "the bash call to be running",
            STARTUP_TIMEOUT,
        )
        # Saved as running just before its process is started: wait for the process too.
        wait_for(lambda: bool(descendants(proc.pid)), "the bash command started", STARTUP_TIMEOUT)
        killed = kill9(proc)
    assert killed, "the bash command runs in a child process"

    configured.script(Text("noted, it was interrupted"))
    code, _, err = run_cli(capsys, "run", "--continue", "go on")
    assert code == 0, err
    request = configured.requests[-1]
    assert tool_pairs_ok(request)
    (result,) = [m for m in request["messages"] if m["role"] == "tool"]
    assert result["content"] == INTERRUPTED_OUTPUT
    assert text_of(conversation(request)[-1]) == "go on"

    tools = [
        p for m in export_latest(capsys)["messages"] for p in m["parts"] if p["type"] == "tool"
    ]
    (tool,) = tools
    assert tool["state"]["status"] == "error"
    assert tool["state"]["error"] == INTERRUPTED_OUTPUT
    assert tool["state"]["input"] == {"command": "echo started; sleep 60"}


def test_kill_9_mid_compaction_discards_the_half_summary_and_compacts_again(
    configured: FakeOpenAI, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configured.script(Text("first answer"))
    assert run_cli(capsys, "run", "first question")[0] == 0

    configured.script(Hang(text="half a summary", delay=60))
    with reaped(spawn(isolated, "compact", "--continue")) as proc:
        wait_for(
            lambda: part_saved("half a summary"),
            "the half summary in the database",
            STARTUP_TIMEOUT,
        )
        kill9(proc)
    assert is_summary_request(configured.requests[1])

    configured.script(Text("FULL SUMMARY"), Text("done"))
    code, out, err = run_cli(capsys, "run", "--continue", "after crash")
    assert code == 0, err
    summary_request = configured.requests[2]
    assert is_summary_request(summary_request), "the pending compaction is processed first"
    assert "first question" in json.dumps(summary_request["messages"])
    exported = json.dumps(export_latest(capsys))
    assert "half a summary" not in exported
    assert "FULL SUMMARY" in exported and "first answer" in exported  # nothing else lost

    # Then the message typed for this run is answered on top of the new summary.
    assert len(configured.requests) == 4, "'after crash' was never sent to the model"
    final = configured.requests[3]
    conv = conversation(final)
    assert [text_of(m) for m in conv[:2]] == [COMPACTION_QUESTION, "FULL SUMMARY"]
    assert text_of(conv[-1]) == "after crash"
    assert final["tools"]
    assert out.rstrip().endswith("done")


# ---- Ctrl+C -----------------------------------------------------------------------------


def test_ctrl_c_mid_stream_exits_130_and_saves_the_text(
    configured: FakeOpenAI, isolated: Path
) -> None:
    configured.script(Hang(text="partial answer", delay=60))
    with reaped(spawn(isolated, "run", "tell me everything")) as proc:
        read_until(proc, b"partial answer", STARTUP_TIMEOUT)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == 130, stderr.decode()
    err = stderr.decode()
    assert "Traceback" not in err
    assert "interrupted" in err and "saved" in err
    texts = db_rows("SELECT data FROM part WHERE type = 'text'")
    assert any(json.loads(row[0])["text"] == "partial answer" for row in texts)
    (info,) = db_rows("SELECT info FROM message WHERE role = 'assistant'")
    assert json.loads(info[0])["error"]["kind"] in ("aborted", "interrupted")


# ---- two processes ----------------------------------------------------------------------


def test_two_processes_on_one_database(
    fake_llm: FakeOpenAI,
    isolated: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process mid-turn (its reply held) while this one runs a whole turn in another
    project on the same database: both finish, neither loses a row."""
    gate = threading.Event()

    def answer(body: dict[str, Any]) -> Text | Gated:
        question = text_of(body["messages"][-1])
        reply = Text(f"answer to {question}", chunk_size=2, delay=0.01)
        return Gated(reply, gate) if question == "question left" else reply

    fake_llm.responder = answer
    projects = [isolated.parent / "left", isolated.parent / "right"]
    for project in projects:
        project.mkdir()
        write_config(project, fake_llm)
    with reaped(spawn(projects[0], "run", "question left")) as proc:
        fake_llm.wait_for_requests(1, timeout=STARTUP_TIMEOUT)  # its turn is under way
        monkeypatch.chdir(projects[1])
        code, out, err = run_cli(capsys, "run", "question right")
        assert proc.poll() is None  # still mid-turn: the two overlapped
        gate.set()
        left_out, left_err = proc.communicate(timeout=STARTUP_TIMEOUT)
    assert proc.returncode == 0, left_err.decode()
    assert b"Traceback" not in left_err
    assert code == 0, err
    assert b"answer to question left" in left_out
    assert "answer to question right" in out

    listed = {Path(s["directory"]).name: s for s in sessions(capsys)}
    assert set(listed) == {"left", "right"}
    for name, session in listed.items():
        assert session["messages"] == 2
        code, out, _ = run_cli(capsys, "export", session["id"])
        assert code == 0
        assert f"answer to question {name}" in out
