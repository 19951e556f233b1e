"""The command's side of the provider process (provider/worker.py).

`start()` launches it; from then on `api.current()` is its `ProviderProcess`: streams,
model info and credentials checks are asked of the process, and awaited (never waited
for: the process may still be importing litellm for seconds). Replies are read by one
thread and handed to whoever waits: an asyncio queue per stream, a future per call.

The launch is the first thing `agent-tui run` does (`__main__.py`), before even the CLI
is imported: every millisecond before it is a millisecond added to the first request.
So this module imports only `os` and `sys` at its top, and launches with `posix_spawn`
(no `subprocess`); the rest loads once the process is on its way.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio
    from collections.abc import AsyncIterator
    from concurrent.futures import Future

    from agent_tui.errors import ProviderError
    from agent_tui.provider.stream_events import ModelRequest, ProviderEvent

MODEL_COMMANDS = ("run", "compact", "uncompact")
"""The commands that call the model in their own process, and so start a provider one."""

DISABLE_ENV = "AGENT_TUI_PROVIDER_PROCESS"
"""Set to 0 to call litellm inside the command itself (debugging, profiling); `lazy`
starts the process but imports litellm at the first request, not at once (an app
opened to read sessions never pays its seconds of CPU and its memory)."""


def _spawn(warm: bool, log: str | None) -> tuple[int, int, int]:
    """(pid, fd to write its stdin, fd to read its stdout). Its stderr is ours, or the
    file `log` (the app: a line on the terminal would break the screen)."""
    to_child, to_us = os.pipe(), os.pipe()  # both ends close-on-exec; dup2 clears it
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_DUP2, to_child[0], 0),
        (os.POSIX_SPAWN_DUP2, to_us[1], 1),
    ]
    if log is not None:
        actions.append((os.POSIX_SPAWN_OPEN, 2, log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    flags = ["--lazy"] if _setting() == "lazy" else ["--warm"] if warm else []
    pid = os.posix_spawn(
        sys.executable,
        [sys.executable, "-P", "-m", "agent_tui.provider.worker", *flags],
        os.environ,
        file_actions=actions,
    )
    os.close(to_child[0])
    os.close(to_us[1])
    return pid, to_child[1], to_us[0]


def _setting() -> str:
    """DISABLE_ENV read: "off", "lazy" or "on" (unset or anything else)."""
    from agent_tui.provider import shared  # import-light too

    if shared.switched_off(DISABLE_ENV):
        return "off"
    return "lazy" if os.environ.get(DISABLE_ENV, "").strip().lower() == "lazy" else "on"


class ProviderProcess:
    """A provider process of this command's own, or (`connection`) the person's warm
    engine reached over its socket (provider/shared.py): the same protocol either way.
    It answers the provider interface (provider/api.py)."""

    def __init__(
        self, *, warm: bool = False, log: str | None = None, connection: Any = None
    ) -> None:
        import itertools
        import threading

        self.log = log
        self.connection = connection
        if connection is None:
            self.pid, write_fd, read_fd = _spawn(warm, log)
            self._input = os.fdopen(write_fd, "wb")
            self._output = os.fdopen(read_fd, "rb")
        else:
            self.pid = 0
            self._input = connection.makefile("wb")
            self._output = connection.makefile("rb")
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._calls: dict[int, Future[Any]] = {}
        self._streams: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]]] = {}
        self._lock = threading.Lock()
        self._wait_lock = threading.Lock()
        self._status: int | None = None
        self._ended: str | None = None
        self._leaving = False
        self._reader = threading.Thread(target=self._read, name="provider-replies", daemon=True)
        self._reader.start()

    # ---- requests -------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        import json

        data = json.dumps(message).encode() + b"\n"
        try:
            with self._write_lock:
                self._input.write(data)
                self._input.flush()
        except (OSError, ValueError):  # a broken pipe, or closed by `close`
            raise self._gone() from None

    def _enlist(self, waiting: dict[int, Any], waiter: Any) -> int:
        """A new request id, with `waiter` registered under it for the replies; the
        error at once when the process has ended."""
        ident = next(self._ids)
        with self._lock:
            if self._ended is not None:
                raise self._gone()
            waiting[ident] = waiter
        return ident

    async def call(self, name: str, *args: Any) -> Any:
        """litellm's `name(*args)` in the provider process, awaited."""
        import asyncio
        from concurrent.futures import Future

        future: Future[Any] = Future()
        ident = self._enlist(self._calls, future)
        self._send({"id": ident, "op": "call", "name": name, "args": list(args)})
        return await asyncio.wrap_future(future)

    async def model_info(self, model: str) -> dict[str, Any] | None:
        try:
            info = await self.call("get_model_info", model)
        except Exception:  # unmapped models: litellm raises there, as it would here
            return None
        return dict(info) if info is not None else None

    async def validate_environment(self, model: str) -> dict[str, Any]:
        return dict(await self.call("validate_environment", model) or {})

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        import asyncio
        import contextlib

        from agent_tui.errors import ProviderError
        from agent_tui.provider.stream_events import event_adapter
        from agent_tui.provider.wire import error_from_json

        adapter = event_adapter()
        replies: asyncio.Queue[Any] = asyncio.Queue()
        ident = self._enlist(self._streams, (asyncio.get_running_loop(), replies))
        finished = False
        try:
            self._send({"id": ident, "op": "stream", "request": request.model_dump(mode="json")})
            while True:
                reply = await replies.get()
                if "e" in reply:
                    yield adapter.validate_python(reply["e"])
                    continue
                finished = True
                if "end" in reply:
                    return
                raise error_from_json(reply["err"])
        finally:
            with self._lock:
                self._streams.pop(ident, None)
            stopped = not finished and self._ended is None
            if stopped and not (request.detachable and self._leaving):  # stop the stream
                with contextlib.suppress(ProviderError):
                    self._send({"id": ident, "op": "cancel"})

    # ---- replies --------------------------------------------------------------------

    def _read(self) -> None:
        import json

        from agent_tui.provider.wire import error_from_json

        for line in iter(self._output.readline, b""):
            try:
                reply = json.loads(line)
                ident = reply["id"]
            except (ValueError, KeyError, TypeError):
                continue
            with self._lock:
                future = self._calls.pop(ident, None)
                stream = self._streams.get(ident)
            if future is not None:
                if "err" in reply:
                    future.set_exception(error_from_json(reply["err"]))
                else:
                    future.set_result(reply.get("ok"))
            elif stream is not None:
                loop, replies = stream
                loop.call_soon_threadsafe(replies.put_nowait, reply)
        self._end()

    def _wait(self) -> int:
        """The process's exit code (negative: the signal), once."""
        with self._wait_lock:
            if self._status is None and self.connection is not None:
                self._status = 0  # the engine is not this command's child
            if self._status is None:
                try:
                    _, status = os.waitpid(self.pid, 0)
                    self._status = os.waitstatus_to_exitcode(status)
                except ChildProcessError:
                    self._status = 0
            return self._status

    def _end(self) -> None:
        """The process is gone: everyone still waiting gets the error."""
        import contextlib

        from agent_tui.provider.wire import error_to_json

        code = self._wait()
        with self._lock:
            if self._ended is None:
                self._ended = f"exit status {code}" if code >= 0 else f"signal {-code}"
            calls, self._calls = self._calls, {}
            streams = list(self._streams.values())
        error = error_to_json(self._gone())
        for future in calls.values():
            future.set_exception(self._gone())
        for loop, replies in streams:
            with contextlib.suppress(RuntimeError):  # that loop has closed
                loop.call_soon_threadsafe(replies.put_nowait, {"err": error})

    def _gone(self) -> ProviderError:
        from agent_tui.errors import ProviderError

        if self.connection is not None:
            return ProviderError(
                "agent-tui's warm engine (litellm, shared by your commands) ended "
                f"unexpectedly ({self._ended or 'it stopped reading'}); its log is beside "
                "its socket (`agent-tui engine` shows where). What was streamed is saved; the "
                "next command starts a new engine."
            )
        return ProviderError(
            "agent-tui's provider process (litellm) ended unexpectedly "
            f"({self._ended or 'it stopped reading'}); what it printed is "
            f"{'in ' + self.log if self.log else 'above'}. "
            "What was streamed is saved; run the command again to retry "
            f"(or set {DISABLE_ENV}=0 to call the provider from this process)."
        )

    def leave(self) -> bool:
        """The command is ending: the requests it may leave (`detachable`) are not
        cancelled with it but go on in the warm engine, which saves them
        (provider/kept.py). False when there is no engine to take them."""
        self._leaving = self.connection is not None
        return self._leaving

    def close(self) -> None:
        """End the process at once: the command is done with it (every stream it still
        had is cancelled by now), and it may still be importing litellm, which would
        hold an orderly exit for seconds. Its connections close with it."""
        import contextlib
        import signal

        with self._lock:
            if self._ended is None:
                self._ended = "closed"
        if self.connection is not None:  # the engine stays for the next command
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)  # SHUT_RDWR: the reader thread sees EOF
            self._wait()
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self._wait()
        with contextlib.suppress(OSError):  # its output is the reader thread's: it sees EOF
            self._input.close()


_process: ProviderProcess | None = None


def start(*, warm: bool = False, log: str | None = None) -> ProviderProcess | None:
    """Launch the provider process (once); None when it is switched off. `warm`: it
    also loads litellm's tokenizer once imported (the app: a person types for seconds
    before the first request; `run` sends its request at once and must not wait).
    `log`: a file for what it prints instead of this process's stderr."""
    global _process
    if _setting() == "off":
        return None
    if _process is None:
        _process = _shared_engine()
    if _process is None:
        try:
            _process = ProviderProcess(warm=warm, log=log)
        except OSError:  # cannot start one (its log, the interpreter): litellm imports here
            return None
    return _process


def leave() -> bool:
    """The command is ending: whether the warm engine takes over what it may leave (a
    summary being prepared: ProviderProcess.leave)."""
    return _process is not None and _process.leave()


def _shared_engine() -> ProviderProcess | None:
    """The person's warm engine (provider/shared.py), started if none runs; None when
    `engine.idle` is 0 or it cannot be reached (then the command starts its own)."""
    from agent_tui.provider import shared

    try:
        idle = shared.idle_minutes()
        connection = shared.connect_or_start(idle) if idle > 0 else None
    except OSError:
        return None
    return ProviderProcess(connection=connection) if connection is not None else None


def current() -> ProviderProcess | None:
    return _process


def describe() -> str:
    """For `/context`: where litellm runs for this command."""
    if _process is None:
        return "Provider: litellm in this process."
    if _process.connection is not None:
        return (
            "Provider: your warm engine, shared by your commands (`agent-tui engine` shows "
            "it; `engine.idle` sets how long it stays unused)."
        )
    return "Provider: a provider process of this command's own (engine.idle is 0)."


def stop() -> None:
    global _process
    if _process is not None:
        _process.close()
        _process = None
