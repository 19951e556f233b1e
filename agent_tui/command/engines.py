"""`agent-tui engine`: this person's warm engines (provider/shared.py) — which runs, its
pid, idle time, memory and the commands connected; `--stop` ends them."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any

from agent_tui.command.core import CLI, Call, Command, NoArgs, flag


@dataclass
class Engines:
    data: list[dict[str, Any]]
    lines: list[str] = field(default_factory=list)

    def message(self) -> str:
        return "\n".join(self.lines)


@dataclass
class EngineArgs(NoArgs):
    stop: bool = flag("stop them (the next command starts one)")


async def _engine(call: Call, args: EngineArgs) -> Engines:
    from agent_tui.provider import shared

    current = None
    with contextlib.suppress(OSError):
        current = shared.socket_path()
    found = []
    for path in shared.engines():
        status = shared.ask(path, "stop" if args.stop else "status")
        if status is None:  # a crashed engine's socket: nothing answers there
            path.unlink(missing_ok=True)
            continue
        found.append({**status, "current": path == current})
    if args.stop:
        for pid in [int(str(status.get("pid", 0))) for status in found]:
            await _wait_gone(pid)
    if not found:
        idle = shared.idle_minutes()
        why = (
            "engine.idle is 0"
            if idle == 0
            else f"one starts with the next command; idle {idle:g} min"
        )
        return Engines(found, [f"No warm engine runs ({why})."])
    return Engines(found, [_line(status, stopped=args.stop) for status in found])


def _line(status: dict[str, object], *, stopped: bool) -> str:
    idle = float(str(status.get("idle_seconds", 0)))
    limit = float(str(status.get("idle_limit_seconds", 0)))
    rss = int(str(status.get("rss_kb", 0))) // 1024
    which = (
        "this install and environment's"
        if status.get("current")
        else "another version's or environment's"
    )
    verb = "stopped" if stopped else "runs"
    return (
        f"Warm engine {status.get('pid')} ({which}) {verb}: up {status.get('uptime_seconds')} s, "
        f"idle {idle:.0f} s of {limit:.0f} s, {rss} MiB, {status.get('connections')} "
        f"commands connected, {status.get('served')} served; socket {status.get('socket')}"
    )


async def _wait_gone(pid: int, timeout: float = 5.0) -> None:
    """Until the stopped process is gone (the event loop goes on meanwhile)."""
    deadline = time.monotonic() + timeout
    while pid > 0 and time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except OSError:
            return
        await asyncio.sleep(0.02)


ENGINE = Command(
    "engine",
    "Show your warm engines (pid, idle time, memory, commands connected); --stop ends them",
    _engine,
    EngineArgs,
    session=False,
    views=frozenset({CLI}),
    engine=False,
)
