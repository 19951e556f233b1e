"""One hook command run to its end: the event on stdin, stdout and stderr read as they
arrive. Its result is complete when the hook's own process exits, even when a child it
left in the background (`(sleep 100 &); echo x`) still holds the pipes: what the hook
wrote is in the pipe by then, so it is read at once instead of waiting for an end of
file that only the child would bring."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from pathlib import Path
from typing import Any

from agent_tui import procs
from agent_tui.config.hook_config import HookCommand
from agent_tui.hooks.answer import BLOCK_EXIT, Outcome, first_error

OUTPUT_LIMIT = 10_000
"""Characters of a hook's stdout or stderr that are read (context, reasons)."""


class _Pipe:
    """A pipe's read end, drained by the event loop as data arrives."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        self.data = bytearray()
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(self.read_fd, self.drain)

    def drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.read_fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                self._loop.remove_reader(self.read_fd)
                return
            if len(self.data) < OUTPUT_LIMIT * 4:
                self.data += chunk

    def text(self) -> str:
        """All the hook wrote: read once it has exited."""
        self.drain()
        self._loop.remove_reader(self.read_fd)
        os.close(self.read_fd)
        return self.data.decode("utf-8", "replace")[:OUTPUT_LIMIT]


async def run_command(
    command: HookCommand,
    data: dict[str, Any],
    cwd: Path | None,
    env: dict[str, str],
    argv: list[str],
) -> Outcome:
    """Run `argv` (the hook's command through a shell, perhaps inside the sandbox)."""
    out, err = _Pipe(), _Pipe()
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=out.write_fd,
            stderr=err.write_fd,
            cwd=cwd,
            env=env,
            start_new_session=True,  # its own group: a timeout stops all it started
        )
    except BaseException:
        out.text(), err.text()  # closed: a hook that cannot start leaves no descriptor
        raise
    finally:
        os.close(out.write_fd)
        os.close(err.write_fd)
    procs.track(proc.pid)
    feed = asyncio.ensure_future(_feed(proc, json.dumps(data).encode()))
    try:
        await asyncio.wait_for(proc.wait(), command.timeout)
    except TimeoutError:
        _kill(proc.pid)
        await proc.wait()
        return Outcome(warning=f"timed out after {command.timeout:g} s; going on.")
    except BaseException:
        _kill(proc.pid)
        raise
    finally:
        feed.cancel()
        procs.release(proc.pid)
        stdout, stderr = out.text(), err.text()
    outcome = Outcome(proc.returncode, stdout, stderr)
    if outcome.code not in (0, BLOCK_EXIT):
        first = first_error(outcome.stderr or outcome.stdout)
        outcome.warning = f"failed (exit {outcome.code})" + (f": {first}" if first else ".")
    return outcome


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    """The event on the hook's stdin; a hook that does not read it is not an error."""
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        proc.stdin.write(data)
        await proc.stdin.drain()
        proc.stdin.close()


def _kill(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
