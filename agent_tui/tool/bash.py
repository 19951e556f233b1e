"""The bash tool: run a command in its own process group, with a timeout and abort.

The group and the AGENT_TUI_OWNER marker in its environment let agent-tui stop whatever
the command left running when it exits, or reap it at the next start (see procs.py).
Where it can be, the command runs in the sandbox (`ToolContext.sandbox`, sandbox/): the
bubblewrap process leads the group, and what it started ends with it; a blocked command
is explained and may be run again outside (tool/escalation.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_tui import procs
from agent_tui.errors import ToolError
from agent_tui.secrets import ToolEnvironment
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.bash_output import OutputCapture
from agent_tui.tool.escalation import after_sandbox
from agent_tui.tool.tool_paths import resolve_path

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
KILL_GRACE_SECONDS = 2.0
"""Time between SIGTERM and SIGKILL when stopping a command's process group."""
DRAIN_SECONDS = 1.0
"""After the shell exits, how long to keep reading output that background jobs may hold."""
READ_CHUNK_BYTES = 64 * 1024

Outcome = Literal["exited", "timed_out", "interrupted"]


class BashParams(BaseModel):
    command: str = Field(description="The bash command to run.")
    timeout: int = Field(
        default=DEFAULT_TIMEOUT_MS,
        ge=1,
        le=MAX_TIMEOUT_MS,
        description=f"Timeout in ms (default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS}).",
    )
    description: str | None = Field(
        default=None,
        description="A short (5-10 words) description of what the command does.",
    )
    workdir: str | None = Field(
        default=None,
        description="Folder to run in, relative to the working directory (default: it).",
    )


NON_INTERACTIVE = {"PAGER": "cat", "GIT_PAGER": "cat", "GIT_TERMINAL_PROMPT": "0"}
"""No pager or credential prompt may wait for a person who is not watching stdin."""


def command_env(tool_env: dict[str, str] | None) -> dict[str, str]:
    """The tools' environment (secrets withheld, see secrets.py) plus NON_INTERACTIVE and
    the owner marker (procs.py). Without one (a bare ToolContext), agent-tui's own minus
    the default exclusions."""
    if tool_env is None:
        tool_env = ToolEnvironment.build(os.environ).env
    return procs.process_env({**tool_env, **NON_INTERACTIVE})


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _pump(stream: asyncio.StreamReader, capture: OutputCapture) -> None:
    while chunk := await stream.read(READ_CHUNK_BYTES):
        await capture.feed(chunk)


async def _finish(tasks: set[asyncio.Task[Any]], seconds: float) -> bool:
    """Wait up to `seconds` for all tasks; True when they all finished."""
    pending = {t for t in tasks if not t.done()}
    if pending:
        _, pending = await asyncio.wait(pending, timeout=seconds)
    return not pending


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
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


async def _stop_group(pgid: int, tasks: set[asyncio.Task[Any]]) -> None:
    """SIGTERM the whole group, SIGKILL whatever is left after a grace period."""
    _signal_group(pgid, signal.SIGTERM)
    await _finish(tasks, KILL_GRACE_SECONDS)
    # Always: children that ignored SIGTERM or closed their output are still in the group.
    _signal_group(pgid, signal.SIGKILL)
    await _finish(tasks, KILL_GRACE_SECONDS)


async def run_command(
    argv: list[str],
    cwd: Path,
    timeout_s: float,
    abort: asyncio.Event,
    capture: OutputCapture,
    env: dict[str, str],
) -> tuple[Outcome, int | None]:
    """Run `argv` until it exits, times out or `abort` is set. (outcome, exit code)."""
    loop = asyncio.get_running_loop()
    create = asyncio.ensure_future(
        loop.subprocess_exec(
            lambda: _ExitAwareProtocol(READ_CHUNK_BYTES, loop),
            *argv,
            cwd=cwd,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # its own process group, so that we can stop all of it
        )
    )
    try:
        transport, protocol = await asyncio.shield(create)
    except asyncio.CancelledError:
        # Cancelled while the pipes were being connected: the command may already run
        # (and have started children); asyncio would kill only the shell.
        with contextlib.suppress(Exception):
            started, _ = await create
            _signal_group(started.get_pid(), signal.SIGKILL)
            started.close()
        raise
    pgid = transport.get_pid()
    procs.track(pgid)  # stopped when agent-tui exits if background jobs outlive the shell
    assert protocol.stdout is not None
    pump = asyncio.create_task(_pump(protocol.stdout, capture))
    exited = asyncio.create_task(protocol.exited.wait())
    aborted = asyncio.create_task(abort.wait())
    outcome: Outcome = "exited"
    try:
        done, _ = await asyncio.wait(
            {exited, aborted}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if exited in done:
            # Background jobs (`cmd &`) may hold the pipe open; do not wait for them.
            await _finish({pump}, DRAIN_SECONDS)
        else:
            outcome = "interrupted" if aborted in done else "timed_out"
            await _stop_group(pgid, {exited, pump})
    finally:
        if transport.get_returncode() is None:  # cancelled from outside: leave nothing running
            _signal_group(pgid, signal.SIGKILL)
            await _finish({exited, pump}, KILL_GRACE_SECONDS)
        for task in (aborted, pump, exited):
            task.cancel()
        await asyncio.gather(aborted, pump, exited, return_exceptions=True)
        transport.close()
        await capture.close()
        procs.release(pgid)  # only once nothing of the command is left
    return outcome, transport.get_returncode()


def _status_notes(outcome: Outcome, exit_code: int | None, timeout_ms: int) -> list[str]:
    if outcome == "timed_out":
        return [f"Command timed out after {timeout_ms} ms and was stopped."]
    if outcome == "interrupted":
        return ["Command was interrupted by the person."]
    if exit_code is not None and exit_code < 0:
        try:
            name = signal.Signals(-exit_code).name
        except ValueError:
            name = f"signal {-exit_code}"
        return [f"Command was killed by {name}.", f"Exit code: {exit_code}"]
    if exit_code:
        return [f"Exit code: {exit_code}"]
    return []


class BashTool(Tool[BashParams]):
    name = "bash"
    description = (
        "Run a bash command in the working directory (or workdir) and return its combined "
        "stdout and stderr. Stdin is closed, so interactive commands fail; pass flags such "
        "as --yes. Commands are stopped after `timeout` ms (default 2 minutes). Long output "
        "is cut to its last part and saved in full to a file you can read or grep. Prefer "
        "the read, grep, glob and list tools over cat, grep, find and ls."
    )
    Params = BashParams
    default_permission = "ask"

    def describe(self, params: BashParams, ctx: ToolContext) -> tuple[str, str]:
        return params.command, params.command

    async def execute(self, params: BashParams, ctx: ToolContext) -> ToolResult:
        cwd = await resolve_path(ctx, params.workdir) if params.workdir else ctx.directory
        if not cwd.is_dir():
            raise ToolError(f"workdir {cwd} does not exist or is not a folder.")
        argv, env = ["/bin/bash", "-c", _with_env_file(params.command, ctx)], command_env(ctx.env)
        if ctx.sandbox is None:
            return await _run(params, ctx, argv, env, cwd)
        wrapped = await ctx.sandbox.wrap(
            argv, env, key=ctx.session_id, project=ctx.directory, cwd=cwd, read_only=ctx.read_only
        )
        result = await _run(params, ctx, wrapped.argv, wrapped.env, cwd)
        if wrapped.policy is None:
            return result
        return await after_sandbox(
            result, params.command, wrapped.policy, ctx, lambda: _run(params, ctx, argv, env, cwd)
        )


def _with_env_file(command: str, ctx: ToolContext) -> str:
    """The command after `CLAUDE_ENV_FILE`'s lines, in the same shell (Claude Code's
    SessionStart hooks activate a venv or nvm for every later command this way)."""
    path = ctx.env_file
    if path is None or not path.is_file() or path.stat().st_size == 0:
        return command
    return f". {shlex.quote(str(path))}\n{command}"


async def _run(
    params: BashParams, ctx: ToolContext, argv: list[str], env: dict[str, str], cwd: Path
) -> ToolResult:
    capture = OutputCapture(ctx.output_dir, ctx.truncation, ctx.redact, ctx.progress)
    outcome, exit_code = await run_command(
        argv, cwd, params.timeout / 1000, ctx.abort, capture, env
    )
    output, metadata = await asyncio.to_thread(capture.render)
    notes = _status_notes(outcome, exit_code, params.timeout)
    if not output and not notes:
        output = "(no output)"
    output = "\n\n".join(part for part in (output.rstrip("\n"), "\n".join(notes)) if part)
    metadata["exit_code"] = exit_code
    if capture.redactions:
        metadata["redacted"] = capture.redactions
    if outcome != "exited":
        metadata[outcome] = True  # timed_out or interrupted
    if params.description:
        metadata["description"] = params.description
    return ToolResult(title=params.description or params.command, output=output, metadata=metadata)
