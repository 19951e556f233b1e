"""`agent-tui serve` as a real subprocess for tests, and `agent-tui` commands run against it."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent_tui.server_link import server_token
from tests.process_helpers import agent_tui_argv, python_argv

ROOT = Path(__file__).resolve().parent.parent
LISTENING = re.compile(r"listening on (http://\S+)")

PROBE = """\
import sys
from agent_tui.cli import main
code = main(sys.argv[1:])
heavy = sorted(m for m in ("litellm", "textual", "acp", "pydantic") if m in sys.modules)
print("LOADED", code, ",".join(heavy), file=sys.stderr)
raise SystemExit(code)
"""
"""`agent-tui ARGS` that reports on stderr which heavy modules it imported."""


@dataclass
class Served:
    url: str
    process: subprocess.Popen[str]

    @property
    def token(self) -> str:
        token = server_token.read_token()
        assert token
        return token


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}


@contextlib.contextmanager
def serve(project: Path, *extra: str) -> Iterator[Served]:
    """`agent-tui serve --port 0` in `project`, until the block ends (then Ctrl+C)."""
    log = (project.parent / "serve-stderr.log").open("a")
    process = subprocess.Popen(
        agent_tui_argv("serve", "--port", "0", *extra),
        cwd=project,
        env=env(),
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # printed once it listens; "" if it died
        found = LISTENING.search(line)
        if found is None:
            process.wait(timeout=30)
            log.flush()
            logged = (project.parent / "serve-stderr.log").read_text()
            raise AssertionError(f"serve did not start: {line!r}\n{logged}")
        yield Served(found.group(1), process)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()
        log.close()


def agent(
    project: Path, *args: str, input: str | None = None, probe: bool = False
) -> subprocess.CompletedProcess[str]:
    """`agent-tui ARGS` as a subprocess in `project` (with `probe`: reporting imports)."""
    command = python_argv("-c", PROBE, *args) if probe else agent_tui_argv(*args)
    done = subprocess.run(
        command,
        cwd=project,
        env=env(),
        capture_output=True,
        text=True,
        input=input,
        timeout=120,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def loaded(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The heavy modules a probed run imported."""
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED"))
    names = line.split(" ", 2)[2] if line.count(" ") >= 2 else ""
    return [n for n in names.split(",") if n]


def tool_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("[", "  ↳ "))]
