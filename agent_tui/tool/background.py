"""A session's background commands (bash `run_in_background`): started as a foreground
command would be (same sandbox, environment, process group and owner marker) under a
small supervisor (tool/supervise.py) that ends them if agent-tui is killed; their output
kept by `BackgroundOutput`; read by task_output, stopped by task_stop, the person, or
their session's end; each exit told to the model once, at its next step
(session/task_notices.py). A foreground bash command sent here while it runs (the app's
Ctrl+B: `send_foreground`) is adopted: the same process, not started again. Every change
is published as `BackgroundCommandsChanged`."""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_tui import procs
from agent_tui.errors import ToolError
from agent_tui.events import BackgroundCommand, BackgroundCommandsChanged, Event
from agent_tui.ids import now_ms
from agent_tui.tool import supervise
from agent_tui.tool.background_output import BackgroundOutput
from agent_tui.tool.process_group import FeedSwitch, Group, finish, start_group, stop_group
from agent_tui.tool.saved_outputs import new_path

if TYPE_CHECKING:
    from agent_tui.tool.base import ToolContext
    from agent_tui.tool.bash import BashParams

DRAIN_SECONDS = 0.2
"""After it exits, how long its output may still arrive before what holds the pipe (a
job it left) is stopped with its group."""
LINE_EVENT_SECONDS = 0.5
"""A new last line is published at most this often per session (a chatty server)."""
ID_PREFIX = "b"
TASK_ENV = "AGENT_TUI_BACKGROUND"
"""A background command's own marker (`<session>/<id>`) in its processes' environment:
a stop finds by it what left the command's group (`setsid`), as the owner marker does
for the whole of agent-tui (procs.py)."""


def supervised(argv: list[str], fd: int) -> list[str]:
    """`argv` under the supervisor, which ends it when the pipe at `fd` closes."""
    return [sys.executable, "-I", supervise.__file__, str(fd), *argv]


class Running:
    """One background command: its process group, output and state."""

    def __init__(self, info: BackgroundCommand, output: BackgroundOutput) -> None:
        self.info = info
        self.output = output
        self.ended = asyncio.Event()
        """Set once it has ended and its state is settled (what a blocking read waits for)."""
        self.told = False
        """Its end was reported to the model (a read after it, or the notice)."""
        self.stopping = False
        self.marker = ""
        """Its TASK_ENV value."""
        self._guard: int | None = None
        # Set by `start` or `adopt` as it is listed:
        self._group: Group
        self._watch: asyncio.Task[None]

    @property
    def id(self) -> str:
        return self.info.id

    @property
    def running(self) -> bool:
        return self.info.status == "running"

    async def wait(self, seconds: float, abort: asyncio.Event) -> None:
        """Until it ends, `seconds` pass, or `abort` is set."""
        if not self.running:
            return
        waiters = {asyncio.ensure_future(self.ended.wait()), asyncio.ensure_future(abort.wait())}
        try:
            await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()


class BackgroundCommands:
    """One session's background commands (a `LiveSession`'s)."""

    def __init__(self, session_id: str, publish: Callable[[Event], None] | None = None) -> None:
        self.session_id = session_id
        self.publish = publish
        self._commands: dict[str, Running] = {}
        self._line_event: asyncio.TimerHandle | None = None
        self._foreground: list[asyncio.Event] = []

    # ---- what front-ends and tools read -------------------------------------------------

    def list(self) -> list[BackgroundCommand]:
        """Every background command of the session, oldest first, as it is now."""
        return [self._snapshot(found) for found in self._commands.values()]

    def get(self, command_id: str) -> Running:
        """The command with this id; a ToolError naming the ids there are otherwise."""
        if (found := self._commands.get(command_id.strip())) is not None:
            return found
        known = ", ".join(self._commands) or "none has been started in this session"
        raise ToolError(
            f"No background command has the id {command_id!r} (background commands: {known})."
        )

    def untold(self) -> list[Running]:
        """Commands that ended without the model hearing of it, marked told now."""
        ended = [c for c in self._commands.values() if not c.running and not c.told]
        for command in ended:
            command.told = True
        return ended

    # ---- starting and stopping ----------------------------------------------------------

    async def start(
        self, argv: list[str], cwd: Path, env: dict[str, str], params: BashParams, ctx: ToolContext
    ) -> Running:
        """Start `argv` and return at once; it runs until it exits or is stopped. `params`
        and `ctx`: the bash call's (its command and description; where its output is
        saved, and how it is cut and redacted)."""
        found = self._new(params, now_ms(), ctx)
        found.marker = f"{self.session_id}/{found.info.id}"
        env = {**env, TASK_ENV: found.marker}
        read_end, found._guard = os.pipe()
        feed = FeedSwitch(self._feeder(found))
        try:
            found._group = await start_group(supervised(argv, read_end), cwd, env, feed, [read_end])
        except BaseException:
            os.close(found._guard)
            raise
        finally:
            os.close(read_end)
        return self._add(found)

    async def adopt(
        self, group: Group, params: BashParams, started: int, ctx: ToolContext
    ) -> Running:
        """A running foreground command, sent here: from now on its output feeds its own
        `BackgroundOutput` and it runs until it exits or is stopped, as if started here.
        It was started without the supervisor and its own marker: a killed agent-tui
        leaves it to the next start's reap (procs.py), and in the sandbox to bubblewrap's
        --die-with-parent; a stop ends its process group, not what left it (`setsid`)."""
        found = self._new(params, started, ctx)
        found._group = group
        group.feed.target = self._feeder(found)
        return self._add(found)

    def _new(self, params: BashParams, started: int, ctx: ToolContext) -> Running:
        """A command's entry and its output file, before it is listed (`_add`)."""
        path = new_path(ctx.output_dir)
        info = BackgroundCommand(
            id=self._new_id(),
            command=params.command,
            description=params.description,
            started=started,
            output_path=str(path),
        )
        return Running(info, BackgroundOutput(path, ctx.truncation, ctx.redact))

    def _add(self, found: Running) -> Running:
        found._watch = asyncio.create_task(self._follow(found))
        self._commands[found.info.id] = found
        self._changed()
        return found

    def seed(self, found: Running, printed: str) -> None:
        """What an adopted command printed before (its tool result holds it): its last
        lines, shown at once."""
        found.output.seed(printed)
        self._changed()

    # ---- a foreground command sent to the background ------------------------------------

    @contextlib.contextmanager
    def foreground(self) -> Iterator[asyncio.Event]:
        """While a foreground bash command of the session runs: the event it waits on
        beside its process, set by `send_foreground` to hand it to `adopt`."""
        sent = asyncio.Event()
        self._foreground.append(sent)
        try:
            yield sent
        finally:
            self._foreground.remove(sent)

    def send_foreground(self) -> bool:
        """Send the newest foreground command running now to the background (the app's
        Ctrl+B); False when none runs."""
        if not (waiting := [sent for sent in self._foreground if not sent.is_set()]):
            return False
        waiting[-1].set()
        return True

    async def stop(self, command_id: str, *, tell_model: bool = True) -> Running:
        """Stop one (SIGTERM to its group, SIGKILL after a grace); a ToolError when there
        is no such command or it has ended already. The person's stop is told to the
        model at its next step; `tell_model=False` when the model asked (task_stop)."""
        found = self.get(command_id)
        if not found.running:
            raise ToolError(
                f"Background command {found.id} is not running (it {found.info.status}"
                f"{_code_words(found.info.exit_code)}); there is nothing to stop."
            )
        await self._stop(found, told=not tell_model)
        return found

    async def stop_all(self) -> None:
        """Stop every running one (the session or the engine closes, a turn of `run`
        ends): none outlives its session, and nobody is left to tell."""
        await asyncio.gather(*(self._stop(c) for c in self._commands.values() if c.running))

    async def _stop(self, found: Running, *, told: bool = True) -> None:
        found.stopping = True
        found.told = told
        await stop_group(found._group.pgid, {found._group.exited, found._group.pumping})
        if procs.LINUX and found.marker:  # what left its group (an adopted one has none)
            await asyncio.to_thread(procs.kill_marked, TASK_ENV, found.marker)
        with contextlib.suppress(Exception):
            await asyncio.shield(found._watch)

    # ---- following one -------------------------------------------------------------------

    def _feeder(self, found: Running) -> Callable[[bytes], Any]:
        async def feed(chunk: bytes) -> None:
            before = found.output.last_line
            await found.output.feed(chunk)
            if found.output.last_line != before:
                self._line_changed()

        return feed

    async def _follow(self, found: Running) -> None:
        """Wait for its end, then settle its state and tell the views."""
        group = found._group
        try:
            await group.exited
            # Its own background jobs may hold the pipe: the group goes with it.
            if not await finish({group.pumping}, DRAIN_SECONDS):
                await stop_group(group.pgid, {group.pumping})
        finally:
            await self._settle(found, group)

    async def _settle(self, found: Running, group: Group) -> None:
        group.pumping.cancel()
        await asyncio.gather(group.pumping, return_exceptions=True)
        if found._guard is not None:
            os.close(found._guard)
            found._guard = None
        group.transport.close()
        await found.output.close()
        code = group.transport.get_returncode()
        info = found.info
        info.exit_code, info.ended = code, now_ms()
        info.status = "stopped" if found.stopping else "exited" if code == 0 else "failed"
        info.last_line = found.output.last_line
        procs.release(group.pgid)
        found.ended.set()
        self._changed()

    # ---- events --------------------------------------------------------------------------

    def _snapshot(self, found: Running) -> BackgroundCommand:
        return found.info.model_copy(update={"last_line": found.output.last_line})

    def _changed(self) -> None:
        if self._line_event is not None:
            self._line_event.cancel()
            self._line_event = None
        if self.publish is not None:
            self.publish(
                BackgroundCommandsChanged(session_id=self.session_id, commands=self.list())
            )

    def _line_changed(self) -> None:
        if self._line_event is None:
            loop = asyncio.get_running_loop()
            self._line_event = loop.call_later(LINE_EVENT_SECONDS, self._changed)

    def _new_id(self) -> str:
        while (found := ID_PREFIX + secrets.token_hex(3)) in self._commands:
            pass
        return found


def _code_words(code: int | None) -> str:
    if code is None:
        return ""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f", killed by {signal.Signals(-code).name}"
    return f" with exit code {code}"
