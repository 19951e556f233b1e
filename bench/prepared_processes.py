"""The `run` processes of `bench_prepared.py --processes`: one turn each, on the bench's
own data and config dirs, and the summaries they leave to the relay
(context/preparing.py), waited for at the end so that nothing outlives the bench."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from agent_tui.context.prepared_left import LOCK_DIR, RELAY_LOCKS
from agent_tui.records import AssistantMessage, PreparedSummary
from agent_tui.storage.db import Database
from agent_tui.storage.session_lock import LockHolder

REPO = Path(__file__).resolve().parent.parent
RUN_TIMEOUT = 1800.0
"""Seconds one `run` process may take before the bench gives up."""
PREPARER_TIMEOUT = 300.0
"""Seconds to wait, at the end, for detached preparers still writing a summary."""
WATCH_SECONDS = 0.2


@dataclass
class RunProcess:
    """One turn's `agent-tui run` process (--processes)."""

    launched: float
    exited: float
    code: int
    preparers: list[LockHolder]
    """Who prepared the session's summary when it exited (the relay, finishing the
    one `run` left)."""


RELAY = ["30"]
"""The runs' AGENT_TUI_RELAY (bench_prepared.py --relay)."""


def process_env(root: Path) -> dict[str, str]:
    """This environment on the bench's data and config dirs (nothing of another agent-tui)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_TUI_")}
    env["AGENT_TUI_DATA_DIR"] = str(root / "data")
    env["AGENT_TUI_CONFIG_DIR"] = str(root / "user-config")
    env["AGENT_TUI_RUNTIME_DIR"] = str(root)  # the bench's own relay (docs/relay.md)
    env["AGENT_TUI_RELAY"] = RELAY[0]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def working_in(project: Path) -> list[tuple[int, list[str]]]:
    """Live processes whose working directory is `project` (a `run`, its provider
    process): pid and command line."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if os.readlink(f"/proc/{entry.name}/cwd") != str(project):
                continue
            argv = Path(f"/proc/{entry.name}/cmdline").read_bytes().decode().split("\0")
        except OSError:  # gone, a zombie, or not ours
            continue
        found.append((int(entry.name), argv))
    return found


def preparers(data: Path) -> list[LockHolder]:
    """Who holds a preparation lock now (a command, or the relay finishing what a
    command left). The lock files are read, never locked (a probe would take the lock for
    a moment); a file whose holder is gone is left out."""
    found = []
    for folder in (data / LOCK_DIR, data / LOCK_DIR / RELAY_LOCKS):
        for path in folder.glob("*.lock"):
            try:
                holder = LockHolder.model_validate_json(path.read_bytes())
                os.kill(holder.pid, 0)
            except (OSError, ValueError):
                continue
            found.append(holder)
    return found


@dataclass
class Watcher:
    """Every preparer seen while the bench runs, by pid and front-end: (first seen, last
    seen), sampled every WATCH_SECONDS (one that lived less may be missed)."""

    data: Path
    seen: dict[str, tuple[float, float]] = field(default_factory=dict)
    stop: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> Watcher:
        threading.Thread(target=self._watch, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()

    def _watch(self) -> None:
        while not self.stop.wait(WATCH_SECONDS):
            now = time.monotonic()
            for holder in preparers(self.data):
                name = holder.describe()
                self.seen[name] = (self.seen.get(name, (now, now))[0], now)


def run_turn(project: Path, root: Path, turn: int) -> RunProcess:
    """`python -m agent_tui run [--continue]` until it exits."""
    argv = [sys.executable, "-m", "agent_tui", "run", *(["--continue"] if turn else [])]
    argv.append(f"Turn {turn}: run the next steps.")
    launched = time.monotonic()
    with (root / f"run-{turn}.out").open("wb") as out:
        proc = subprocess.Popen(
            argv,
            cwd=project,
            env=process_env(root),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        try:
            code = proc.wait(RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = proc.wait()
    exited = time.monotonic()
    left = preparers(root / "data")
    if code != 0:
        tail = (root / f"run-{turn}.out").read_text(errors="replace")[-3000:]
        raise SystemExit(f"run (turn {turn}) exited {code}:\n{tail}")
    return RunProcess(launched, exited, code, left)


def wait_for_preparers(project: Path, data: Path) -> list[str]:
    """Until nothing works in the project and no summary is being prepared any more; what
    was still in the project after PREPARER_TIMEOUT is stopped (they are ours) and
    returned."""
    deadline = time.monotonic() + PREPARER_TIMEOUT
    while (left := working_in(project)) or preparers(data):
        if time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for pid, _ in left:
        os.kill(pid, signal.SIGTERM)
    return [" ".join(argv) for _, argv in left]


async def read_back(data: Path) -> tuple[int, list[PreparedSummary]]:
    """(automatic compactions, prepared summaries) of the only session, from the database."""
    db = await Database.open(data / "agent-tui.db")
    try:
        (session,) = await db.list_sessions()
        messages = await db.all_messages(session.id)
        rows = await db.prepared_summaries(session.id)
    finally:
        await db.close()
    summaries = [m for m in messages if isinstance(m.info, AssistantMessage) and m.info.summary]
    return len(summaries), rows
