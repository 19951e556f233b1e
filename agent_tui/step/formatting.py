"""Formatters (config `format`: a file extension -> a command with `{file}`) run after
the agent changes a file, inside the sandbox like any command. The tool's result says the
file was formatted, so the model reads it again before editing what it remembers; the
step's snapshots are taken around it, so /undo restores the file as it was before the
edit. A formatter that fails or is missing is a one-line note; the edit stands."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from pathlib import Path

from agent_tui import procs
from agent_tui.engine_context import EngineContext
from agent_tui.errors import SandboxError
from agent_tui.sandbox.sandbox import Wrapped

FORMAT_TIMEOUT = 30.0
"""Seconds a formatter may take on one file."""


def formatter_for(ctx: EngineContext, path: Path) -> list[str] | None:
    command = ctx.config.format.get(path.suffix) or ctx.config.format.get(path.suffix[1:])
    if not command or not ctx.workspace.formatter_runs(path.suffix):
        return None  # none, or the project's own while its files changed since trusted
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    return [arg.replace("{file}", str(path)) for arg in argv]


async def format_files(
    ctx: EngineContext, session_id: str, directory: Path, files: list[str], read_only: bool
) -> list[str]:
    """Format each changed file that has a formatter: one line a file for the model."""
    notes: list[str] = []
    for name in files:
        path = Path(name) if Path(name).is_absolute() else directory / name
        argv = formatter_for(ctx, path)
        if argv is None or not path.is_file():
            continue
        before = await asyncio.to_thread(path.read_bytes)
        outside = ctx.workspace.containment.outside(f"format:{path.suffix}")
        if failure := await _run(ctx, session_id, directory, argv, read_only, outside):
            notes.append(f"[format] {argv[0]} could not format {name}: {failure}")
        elif await asyncio.to_thread(path.read_bytes) != before:
            notes.append(
                f"[format] {name} was reformatted by `{shlex.join(argv)}`: read it again "
                "before editing it (its text changed from what you wrote)."
            )
    return notes


async def _run(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    argv: list[str],
    read_only: bool,
    outside: bool = False,
) -> str:
    """ "" when the formatter succeeded, else why not (one line). `outside`: the person's
    own `sandbox.outside` names it (`format:.EXT`)."""
    env = procs.process_env(dict(ctx.workspace.tool_env.env))
    try:
        wrapped = (
            Wrapped(argv, ctx.workspace.containment.own_env(env))
            if outside
            else await ctx.sandbox.wrap(
                argv, env, key=session_id, project=directory, cwd=directory, read_only=read_only
            )
        )
        proc = await asyncio.create_subprocess_exec(
            *wrapped.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=directory,
            env=wrapped.env,
            start_new_session=True,
        )
    except (OSError, SandboxError) as exc:
        return str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    procs.track(proc.pid)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), FORMAT_TIMEOUT)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        return f"timed out after {FORMAT_TIMEOUT:g} s"
    finally:
        procs.release(proc.pid)
    if proc.returncode != 0:
        first = out.decode("utf-8", "replace").strip().splitlines()[:1]
        return f"exit {proc.returncode}" + (f": {first[0]}" if first else "")
    return ""
