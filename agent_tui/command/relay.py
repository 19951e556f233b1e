"""`agent-tui relay`: this person's relays (provider/relay.py) — which runs, its
pid, idle time, memory and the commands connected; `--stop` ends them once what they
are doing is done, `--stop --now` at once."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any

from agent_tui.command.core import CLI, Call, Command, NoArgs, flag


@dataclass
class Relays:
    data: list[dict[str, Any]]
    lines: list[str] = field(default_factory=list)

    def message(self) -> str:
        return "\n".join(self.lines)


@dataclass
class RelayArgs(NoArgs):
    stop: bool = flag(
        "stop them: no new command uses them, and each exits once its commands mid-turn "
        "finish (the next command starts a new one)"
    )
    now: bool = flag("with --stop: at once, cutting the turns under way")


async def _relay(call: Call, args: RelayArgs) -> Relays:
    from agent_tui.provider import relay

    if (why_not := relay.unavailable()) is not None:
        line = f"No relay runs here: {why_not}. Each command runs litellm in a "
        return Relays([], [line + "provider process of its own."])
    current = None
    with contextlib.suppress(OSError):
        current = relay.socket_path()
    found = []
    for path in relay.relays():
        status = relay.ask(path, _op(args))
        if status is None and _op(args) == "finish":  # an older relay: no `finish`
            status = relay.ask(path, "status")
            status = {**status, "older": True} if status is not None else None
        if status is None:  # a crashed relay's socket: nothing answers there
            path.unlink(missing_ok=True)
            continue
        found.append({**status, "current": path == current})
    if args.stop or args.now:  # those whose commands finish first leave later
        gone = [status for status in found if args.now or not _under_way(status)[1]]
        for pid in [int(str(status.get("pid", 0))) for status in gone]:
            await _wait_gone(pid)
    if not found:
        idle = relay.idle_minutes()
        why = f"one starts with the next command; idle {idle:g} min" if idle else "relay.idle is 0"
        return Relays(found, [f"No relay runs ({why})."])
    return Relays(found, [_line(status, args) for status in found])


def _op(args: RelayArgs) -> str:
    """What each relay is asked (provider/worker.py): `stop` cuts the turns under way,
    `finish` lets them end first."""
    return "stop" if args.now else "finish" if args.stop else "status"


def _busy(status: dict[str, object]) -> list[int]:
    """The commands mid-turn on a relay (a request of theirs under way), by pid."""
    busy = status.get("busy")
    return [int(str(pid)) for pid in busy] if isinstance(busy, list) else []


def _commands(pids: list[int]) -> str:
    listed = ", ".join(map(str, pids))
    return (
        f"1 command (pid {listed})" if len(pids) == 1 else f"{len(pids)} commands (pids {listed})"
    )


def _under_way(status: dict[str, object]) -> tuple[str, int]:
    """What a relay is still doing ("1 command (pid 7) mid-turn and 1 summary a command
    left"), and how many things that is."""
    busy, summaries = _busy(status), int(str(status.get("summaries") or 0))
    parts = [f"{_commands(busy)} mid-turn"] if busy else []
    if summaries:
        parts.append("1 summary a command left" if summaries == 1 else f"{summaries} summaries")
    return " and ".join(parts), len(busy) + summaries


def _verb(status: dict[str, object], args: RelayArgs) -> str:
    under_way, count = _under_way(status)
    busy = _busy(status)
    if status.get("older") and args.stop:
        return "runs (an older agent-tui's: only `agent-tui relay --stop --now` stops it)"
    if args.now:
        return f"stopped, cutting the turn of {_commands(busy)}" if busy else "stopped"
    stops = f"stops once {under_way} {'finishes' if count == 1 else 'finish'}"
    if args.stop and count:
        return f"takes no new command and {stops} (`agent-tui relay --stop --now` cuts them)"
    if args.stop:
        return "stopped"
    if status.get("leaving"):
        return stops if count else "is stopping"
    return f"runs, {under_way}" if count else "runs"


def _line(status: dict[str, object], args: RelayArgs) -> str:
    idle = float(str(status.get("idle_seconds", 0)))
    limit = float(str(status.get("idle_limit_seconds", 0)))
    rss = int(str(status.get("rss_kb", 0))) // 1024
    which = (
        "this install and environment's"
        if status.get("current")
        else "another version's or environment's"
    )
    return (
        f"Relay {status.get('pid')} ({which}) {_verb(status, args)}: up "
        f"{status.get('uptime_seconds')} s, idle {idle:.0f} s of {limit:.0f} s, {rss} MiB, "
        f"{status.get('connections')} commands connected, {status.get('served')} served; "
        f"socket {status.get('socket')}"
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


RELAY = Command(
    "relay",
    "Show your relays (pid, idle time, memory, commands connected); --stop ends them "
    "once their turns under way finish (--now: at once)",
    _relay,
    RelayArgs,
    session=False,
    views=frozenset({CLI}),
    engine=False,
)
