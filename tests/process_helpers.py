"""Real `agent-tui` processes for tests: start them, read their output as it comes."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

import pytest

from agent_tui import procs

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 120.0
"""Only against a hang, never a measure of speed: a process started on a loaded machine
takes tens of seconds to import litellm before it does anything a test waits for."""
PROCESS_MARK = "process"
"""The marker of the tests that start agent-tui as a process (`-m process`, `-m 'not
process'`): conftest puts it on every test that reaches `agent_tui_argv`."""
running: list[pytest.Item] = []
"""The test running now (conftest), for `agent_tui_argv`'s check."""


def agent_tui_argv(*args: str, python: Sequence[str] = ()) -> list[str]:
    """The command line of a real agent-tui process, `python [PYTHON] -m agent_tui ARGS`:
    every test that starts one builds it here (or with `python_argv`), and carries the
    `process` marker."""
    return python_argv(*python, "-m", "agent_tui", *args)


def python_argv(*args: str) -> list[str]:
    """`python ARGS` running agent-tui's code as a command (`-c` a probe that calls
    `cli.main`, `-m` a module of it): a process start like `agent_tui_argv`'s."""
    if running and running[-1].get_closest_marker(PROCESS_MARK) is None:
        raise AssertionError(
            f"{running[-1].nodeid} starts agent-tui without the '{PROCESS_MARK}' marker "
            "(conftest marks tests that reach agent_tui_argv or python_argv by name)"
        )
    return [sys.executable, *args]


def agent_tui(project: Path, *args: str) -> subprocess.Popen[bytes]:
    """`python -m agent_tui ARGS` in `project`, this checkout first on the path."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key != procs.OWNER_ENV  # the test runner's own marker, if any, is not ours
    }
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        agent_tui_argv(*args),
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def with_sitecustomize(folder: Path, code: str) -> dict[str, str]:
    """The environment of a process that runs `code` as its `sitecustomize` first (a gate,
    a slow import, a refused call), with this checkout on its path: `folder` holds it."""
    folder.mkdir(exist_ok=True)
    (folder / "sitecustomize.py").write_text(code, encoding="utf-8")
    return {"PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"}


def wait_until(condition: Callable[[], object], what: str, timeout: float = DEADLINE) -> None:
    """Poll a condition only real processes can change (no event to await for them)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.02)


class Lines:
    """A process's output read on a thread as it comes: a test waits for one line
    (an event the process reports) and still gets the whole text at the end."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._lines: list[str] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        for raw in iter(stream.readline, b""):
            with self._cond:
                self._lines.append(raw.decode(errors="replace"))
                self._cond.notify_all()
        with self._cond:
            self._lines.append("")  # end of stream
            self._cond.notify_all()

    def wait_for(self, needle: str, timeout: float = 60.0) -> str:
        """The first line containing `needle`; TimeoutError (with what came) otherwise."""

        def found() -> str | None:
            return next((line for line in self._lines if needle in line), None)

        with self._cond:
            if not self._cond.wait_for(lambda: found() or self._ended(), timeout):
                raise TimeoutError(f"no line with {needle!r} in: {''.join(self._lines)}")
            line = found()
            if line is None:
                raise AssertionError(f"ended without {needle!r}: {''.join(self._lines)}")
            return line

    def _ended(self) -> bool:
        return bool(self._lines) and self._lines[-1] == ""

    def text(self, timeout: float = 60.0) -> str:
        self._thread.join(timeout)
        with self._cond:
            return "".join(self._lines)


class Run:
    """A started `agent-tui` with its stdout and stderr read as they come."""

    def __init__(self, project: Path, *args: str) -> None:
        self.process = agent_tui(project, *args)
        assert self.process.stdout is not None and self.process.stderr is not None
        self.out = Lines(self.process.stdout)
        self.err = Lines(self.process.stderr)

    @property
    def pid(self) -> int:
        return self.process.pid

    def finish(self, timeout: float = 90.0) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) once it exits."""
        code = self.process.wait(timeout)
        return code, self.out.text(), self.err.text()

    def kill(self) -> None:
        """SIGKILL: no chance to clean up (the session lock is the kernel's to drop)."""
        self.process.kill()
        self.process.wait(30)
