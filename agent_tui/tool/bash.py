"""The bash tool: run a command in its own process group, with a timeout and abort.

The group and the AGENT_TUI_OWNER marker in its environment let agent-tui stop whatever
the command left running when it exits, or reap it at the next start (see procs.py).
Where it can be, the command runs in the sandbox (`ToolContext.sandbox`, sandbox/): the
bubblewrap process leads the group, and what it started ends with it; a blocked command
is explained and may be run again outside (tool/escalation.py). While it runs, the person
may send it to the background (the app's Ctrl+B, `BackgroundCommands.send_foreground`):
the call returns at once as a `run_in_background` start does, and the same process goes
on as a background command."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from agent_tui import procs
from agent_tui.errors import ToolError
from agent_tui.ids import now_ms
from agent_tui.secrets import ToolEnvironment
from agent_tui.tool.background_lines import killed_by
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.bash_output import OutputCapture
from agent_tui.tool.escalation import after_sandbox
from agent_tui.tool.process_group import (
    KILL_GRACE_SECONDS,
    FeedSwitch,
    Group,
    finish,
    signal_group,
    start_group,
    stop_group,
)
from agent_tui.tool.tool_paths import resolve_path

if TYPE_CHECKING:
    from agent_tui.sandbox import Sandbox, SandboxPolicy
    from agent_tui.sandbox.sandbox import Wrapped
    from agent_tui.tool.background import Running

DEFAULT_TIMEOUT_MS = 120_000
MAX_TIMEOUT_MS = 600_000
DRAIN_SECONDS = 1.0
"""After the shell exits, how long to keep reading output that background jobs may hold."""

Outcome = Literal["exited", "timed_out", "interrupted", "backgrounded"]


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
    run_in_background: bool = Field(
        default=False,
        description=(
            "Return at once with its id and let it run (a dev server, a watcher): read it "
            "with task_output, stop it with task_stop; you are told when it exits."
        ),
    )


OWN_NETWORK_NOTE = (
    "It runs in the sandbox with a network of its own (sandbox.network is off): a server it "
    "starts is reachable only from this same command, not from later ones."
)
SHARED_NETWORK_NOTE = (
    "It runs in the sandbox on this session's own loopback (sandbox.network is off): a "
    "server it starts answers this session's later commands (localhost), nothing outside."
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


@dataclass
class Sending:
    """A foreground command's way to the background: the event the person sets (the
    app's Ctrl+B) and what adopts its process group then."""

    sent: asyncio.Event
    adopt: Callable[[Group], Awaitable[Running]]
    adopted: Running | None = None


async def run_command(
    argv: list[str],
    cwd: Path,
    timeout_s: float,
    abort: asyncio.Event,
    capture: OutputCapture,
    env: dict[str, str],
    sending: Sending | None = None,
) -> tuple[Outcome, int | None]:
    """Run `argv` until it exits, times out, `abort` is set or it is sent to the
    background (then adopted, still running). (outcome, exit code)."""
    group = await start_group(argv, cwd, env, FeedSwitch(capture.feed))
    waiters: dict[asyncio.Task[Any], Outcome] = {asyncio.create_task(abort.wait()): "interrupted"}
    if sending is not None:
        waiters[asyncio.create_task(sending.sent.wait())] = "backgrounded"
    outcome: Outcome = "exited"
    try:
        done, _ = await asyncio.wait(
            {group.exited, *waiters}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
        )
        if group.exited in done:
            # Background jobs (`cmd &`) may hold the pipe open; do not wait for them.
            await finish({group.pumping}, DRAIN_SECONDS)
        elif sending is not None and sending.sent.is_set():
            sending.adopted = await sending.adopt(group)
            outcome = "backgrounded"
        else:
            outcome = next((waiters[t] for t in done if t in waiters), "timed_out")
            await stop_group(group.pgid, {group.exited, group.pumping})
    finally:
        for task in waiters:
            task.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        if outcome != "backgrounded":  # else the background commands own it now
            await _leave_nothing(group)
        await capture.close()
    return outcome, group.transport.get_returncode()


async def _leave_nothing(group: Group) -> None:
    tasks = {group.exited, group.pumping}
    if group.transport.get_returncode() is None:  # cancelled from outside: leave nothing running
        signal_group(group.pgid, signal.SIGKILL)
        await finish(tasks, KILL_GRACE_SECONDS)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    group.transport.close()
    procs.release(group.pgid)  # only once nothing of the command is left


def _status_notes(outcome: Outcome, exit_code: int | None, timeout_ms: int) -> list[str]:
    if outcome == "timed_out":
        return [f"Command timed out after {timeout_ms} ms and was stopped."]
    if outcome == "interrupted":
        return ["Command was interrupted by the person."]
    if exit_code is not None and exit_code < 0:
        return [f"Command was {killed_by(exit_code)}.", f"Exit code: {exit_code}"]
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
        if params.run_in_background:
            return await _start_background(params, ctx, argv, env, cwd)
        if ctx.sandbox is None:
            return await _run(params, ctx, argv, env, cwd)
        wrapped = await _sandboxed(ctx.sandbox, ctx, argv, env, cwd)
        result = await _run(params, ctx, wrapped.argv, wrapped.env, cwd)
        if wrapped.policy is None:
            return result
        return await after_sandbox(
            result, params.command, wrapped.policy, ctx, lambda: _run(params, ctx, argv, env, cwd)
        )


async def _sandboxed(
    sandbox: Sandbox, ctx: ToolContext, argv: list[str], env: dict[str, str], cwd: Path
) -> Wrapped:
    """The command as the session's sandbox runs it (its project, network and mode)."""
    return await sandbox.wrap(
        argv,
        env,
        key=ctx.session_id,
        project=ctx.directory,
        cwd=cwd,
        read_only=ctx.read_only,
        network=ctx.network,
    )


async def _start_background(
    params: BashParams, ctx: ToolContext, argv: list[str], env: dict[str, str], cwd: Path
) -> ToolResult:
    """Start it as a foreground command would start (in the sandbox where commands run
    there) and return its id; it goes on until it exits or is stopped (tool/background.py).
    A command the sandbox blocks is not offered to run outside: its failure shows later."""
    if ctx.background is None:
        raise ToolError(
            "Background commands cannot be started here: run it without run_in_background."
        )
    note = ""
    if ctx.sandbox is not None:
        wrapped = await _sandboxed(ctx.sandbox, ctx, argv, env, cwd)
        argv, env = wrapped.argv, wrapped.env
        note = _network_note(wrapped.policy)
    started = await ctx.background.start(argv, cwd, env, params, ctx)
    output = started_text(started) + (f"\n{note}" if note else "")
    metadata = {"background_id": started.id, "output_path": started.info.output_path}
    return _result(params, output, metadata)


def _network_note(policy: SandboxPolicy | None) -> str:
    """What the model is told of a background command's network in the sandbox."""
    if policy is None or policy.network:
        return ""
    return OWN_NETWORK_NOTE if policy.own_network else SHARED_NETWORK_NOTE


def started_text(found: Running) -> str:
    """What the model reads of a command now running in the background."""
    return (
        f"Command running in background with ID: {found.id}. Output is being written to: "
        f"{found.info.output_path}\nRead its new output with task_output, stop it with "
        "task_stop; you will be told when it exits."
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
    sending = None
    with contextlib.ExitStack() as stack:
        if ctx.background is not None:  # the session's background commands may adopt it
            adopt = partial(ctx.background.adopt, params=params, started=now_ms(), ctx=ctx)
            sending = Sending(stack.enter_context(ctx.background.foreground()), adopt)
        outcome, exit_code = await run_command(
            argv, cwd, params.timeout / 1000, ctx.abort, capture, env, sending
        )
    output, metadata = await asyncio.to_thread(capture.render)
    if sending is not None and sending.adopted is not None:
        assert ctx.background is not None
        ctx.background.seed(sending.adopted, output)
        return _sent_result(params, sending.adopted, output, metadata)
    notes = _status_notes(outcome, exit_code, params.timeout)
    if not output and not notes:
        output = "(no output)"
    output = "\n\n".join(part for part in (output.rstrip("\n"), "\n".join(notes)) if part)
    metadata["exit_code"] = exit_code
    if capture.redactions:
        metadata["redacted"] = capture.redactions
    if outcome != "exited":
        metadata[outcome] = True  # timed_out or interrupted
    return _result(params, output, metadata)


def _sent_result(
    params: BashParams, found: Running, printed: str, metadata: dict[str, Any]
) -> ToolResult:
    """The person sent the running command to the background: the model reads what a
    `run_in_background` start says, and what the command printed so far."""
    so_far = printed.rstrip("\n") or "(no output yet)"
    output = (
        f"The person sent this command to the background while it ran; it goes on.\n"
        f"{started_text(found)}\nWhat it printed before (not in that file):\n{so_far}"
    )
    metadata |= {
        "background_id": found.id,
        "output_path": found.info.output_path,
        "sent_to_background": True,
    }
    return _result(params, output, metadata)


def _result(params: BashParams, output: str, metadata: dict[str, Any]) -> ToolResult:
    """The call's result, titled by its description (kept in the metadata) or command."""
    if params.description:
        metadata["description"] = params.description
    return ToolResult(title=params.description or params.command, output=output, metadata=metadata)
