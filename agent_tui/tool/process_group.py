"""A command's process group: started as its own session (so a stop reaches everything it
spawned), its output pumped as it comes, its shell's exit seen at once, and the whole
group stopped with SIGTERM then SIGKILL. Shared by a foreground command (tool/bash.py)
and one left running in the background (tool/background.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_tui import procs

KILL_GRACE_SECONDS = 2.0
"""Time between SIGTERM and SIGKILL when stopping a command's process group."""
READ_CHUNK_BYTES = 64 * 1024


def signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def pump(stream: asyncio.StreamReader, feed: Callable[[bytes], Awaitable[None]]) -> None:
    """Every chunk the command prints, to `feed`, until its output closes."""
    while chunk := await stream.read(READ_CHUNK_BYTES):
        await feed(chunk)


class FeedSwitch:
    """Where a pumped command's output goes, changed while it runs: a foreground command
    sent to the background feeds its background output from then on."""

    def __init__(self, target: Callable[[bytes], Awaitable[None]]) -> None:
        self.target = target

    async def __call__(self, chunk: bytes) -> None:
        await self.target(chunk)


@dataclass
class Group:
    """A running command's process group as a foreground command hands it over (bash's
    `run_command` to `BackgroundCommands.adopt`): the same process, its pump and exit."""

    transport: asyncio.SubprocessTransport
    exited: asyncio.Task[Any]
    pumping: asyncio.Task[None]
    feed: FeedSwitch

    @property
    def pgid(self) -> int:
        return self.transport.get_pid()


async def finish(tasks: set[asyncio.Task[Any]], seconds: float) -> bool:
    """Wait up to `seconds` for all tasks; True when they all finished."""
    if pending := {t for t in tasks if not t.done()}:
        _, pending = await asyncio.wait(pending, timeout=seconds)
    return not pending


class ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Signals the shell's exit as soon as it happens.

    `Process.wait()` also waits for the output pipe to close, which a background job
    (`server &`) can keep open for ever.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


async def stop_group(pgid: int, tasks: set[asyncio.Task[Any]]) -> None:
    """SIGTERM the whole group, SIGKILL whatever is left after a grace period."""
    signal_group(pgid, signal.SIGTERM)
    await finish(tasks, KILL_GRACE_SECONDS)
    # Always: children that ignored SIGTERM or closed their output are still in the group.
    signal_group(pgid, signal.SIGKILL)
    await finish(tasks, KILL_GRACE_SECONDS)


async def spawn(
    argv: list[str], cwd: Path, env: dict[str, str], pass_fds: Sequence[int] = ()
) -> tuple[asyncio.SubprocessTransport, ExitAwareProtocol]:
    """Start `argv` in its own session and process group (stdin closed, stdout and
    stderr one pipe). Cancelled while starting, nothing of it is left running."""
    loop = asyncio.get_running_loop()
    create = asyncio.ensure_future(
        loop.subprocess_exec(
            lambda: ExitAwareProtocol(READ_CHUNK_BYTES, loop),
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so that we can stop all of it
            pass_fds=tuple(pass_fds),
        )
    )
    try:
        return await asyncio.shield(create)
    except asyncio.CancelledError:
        # Cancelled while the pipes were being connected: the command may already run
        # (and have started children); asyncio would kill only the shell.
        with contextlib.suppress(Exception):
            started, _ = await create
            signal_group(started.get_pid(), signal.SIGKILL)
            started.close()
        raise


async def start_group(
    argv: list[str], cwd: Path, env: dict[str, str], feed: FeedSwitch, pass_fds: Sequence[int] = ()
) -> Group:
    """`spawn` it, tracked (procs.py: stopped when agent-tui exits if its jobs outlive it),
    its output pumped to `feed` as it comes."""
    transport, protocol = await spawn(argv, cwd, env, pass_fds)
    procs.track(transport.get_pid())
    assert protocol.stdout is not None
    pumping = asyncio.create_task(pump(protocol.stdout, feed))
    return Group(transport, asyncio.create_task(protocol.exited.wait()), pumping, feed)
