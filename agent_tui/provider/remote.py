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
    import threading
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
    from agent_tui.provider import relay  # import-light too

    if relay.switched_off(DISABLE_ENV):
        return "off"
    return "lazy" if os.environ.get(DISABLE_ENV, "").strip().lower() == "lazy" else "on"


RESENDS = 3
"""How many times a request goes again to a new relay because the one it was written to
left before reading it (`bye` "finished": none of this command's requests was under way
there, so nothing is lost or asked twice)."""
CLOSED = "closed"
FINISHED, STOPPED = "finished", "stopped"
"""The relay's last word to a command (provider/worker.py `_Relay.leave`)."""


class _Resend(Exception):
    """The relay left before it read the request: send it again, to a new one."""


class ProviderProcess:
    """A provider process of this command's own, or (`connection`) the person's warm
    relay reached over its socket (provider/relay.py): the same protocol either way.
    It answers the provider interface (provider/api.py). A relay's connection that
    ended (`agent-tui relay --stop`, a crash) is replaced at the next request: by a new
    relay, else by a provider process of the command's own."""

    def __init__(
        self, *, warm: bool = False, log: str | None = None, connection: Any = None
    ) -> None:
        import itertools
        import threading

        self.log = log
        self._ids = itertools.count(1)
        self._write_lock = threading.Lock()
        self._calls: dict[int, Future[Any]] = {}
        self._streams: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]]] = {}
        self._lock = threading.Lock()
        self._wait_lock = threading.Lock()
        self._reopen_lock = threading.Lock()
        self._leaving = False
        self._closed = False
        self._open(connection, warm)

    def _open(self, connection: Any, warm: bool = False) -> None:
        """Read the replies of `connection`, or of a new process of this command's own."""
        import threading

        if connection is None:
            self.pid, write_fd, read_fd = _spawn(warm, self.log)
            self._input, output = os.fdopen(write_fd, "wb"), os.fdopen(read_fd, "rb")
        else:
            self.pid = 0
            self._input, output = connection.makefile("wb"), connection.makefile("rb")
        self.connection = connection
        self._status: int | None = None if connection is None else 0  # the relay: not a child
        self._ended: str | None = None
        self._bye: str | None = None
        self._reader = threading.Thread(
            target=self._read, args=(output,), name="provider-replies", daemon=True
        )
        self._reader.start()

    # ---- requests -------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        import json

        data = json.dumps(message).encode() + b"\n"
        try:
            with self._write_lock:
                self._input.write(data)
                self._input.flush()
        except ValueError:  # closed by `close`
            raise self._gone() from None
        except OSError:  # the other end is gone: the reader sees it and answers (`_end`)
            pass

    async def _enlist(self, waiting: dict[int, Any], waiter: Any) -> int:
        """A new request id, with `waiter` registered under it for the replies; a new
        connection first when the relay's has ended; the error at once when the
        process has ended."""
        import asyncio

        if self._ended is not None and self._replaceable():
            await asyncio.to_thread(self._reopen)
        ident = next(self._ids)
        with self._lock:
            if self._ended is not None:
                raise self._gone()
            waiting[ident] = waiter
        return ident

    def _replaceable(self) -> bool:
        return self.connection is not None and not self._closed

    def _reopen(self) -> None:
        """In place of the relay's connection that ended: the person's relay (a new one
        started if none runs), else a provider process of this command's own."""
        import contextlib

        from agent_tui.provider import relay

        with self._reopen_lock:
            if self._ended is None or not self._replaceable():
                return  # another request replaced it meanwhile, or the command is ending
            connection = None
            with contextlib.suppress(OSError):
                idle = relay.idle_minutes()
                connection = relay.connect_or_start(idle) if idle > 0 else None
            old = self.connection
            try:
                with self._write_lock, self._lock:
                    self._open(connection)
            except OSError:  # no process either: the request gets the ended one's error
                if connection is not None:
                    connection.close()
                return
            with contextlib.suppress(OSError):
                old.close()

    async def call(self, name: str, *args: Any) -> Any:
        """litellm's `name(*args)` in the provider process, awaited."""
        import asyncio
        from concurrent.futures import Future

        for _ in range(RESENDS):
            future: Future[Any] = Future()
            ident = await self._enlist(self._calls, future)
            self._send({"id": ident, "op": "call", "name": name, "args": list(args)})
            try:
                return await asyncio.wrap_future(future)
            except _Resend:
                continue
        raise self._gone()

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
        body = request.model_dump(mode="json")
        for _ in range(RESENDS):
            replies: asyncio.Queue[Any] = asyncio.Queue()
            ident = await self._enlist(self._streams, (asyncio.get_running_loop(), replies))
            finished = False
            try:
                self._send({"id": ident, "op": "stream", "request": body})
                while True:
                    reply = await replies.get()
                    if "e" in reply:
                        yield adapter.validate_python(reply["e"])
                        continue
                    finished = True
                    if "end" in reply:
                        return
                    if "resend" not in reply:
                        raise error_from_json(reply["err"])
                    break  # nothing of it had streamed: a new relay answers it
            finally:
                with self._lock:
                    self._streams.pop(ident, None)
                stopped = not finished and self._ended is None
                if stopped and not (request.detachable and self._leaving):  # stop the stream
                    with contextlib.suppress(ProviderError):
                        self._send({"id": ident, "op": "cancel"})
        raise self._gone()

    # ---- replies --------------------------------------------------------------------

    def _read(self, output: Any) -> None:
        """The replies, handed to whoever waits, until the other end is gone (however:
        a reset is an end like any other, never a thread's traceback)."""
        import json

        why = "its connection closed"
        try:
            for line in iter(output.readline, b""):
                try:
                    reply = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(reply, dict):
                    continue
                if "bye" in reply:  # the relay says why it leaves (worker.py)
                    self._bye = str(reply["bye"])
                    continue
                self._hand(reply)
        except ConnectionResetError:  # it left with a request of ours unread
            why = "its connection was reset"
        except (OSError, ValueError) as exc:  # ValueError: closed by `close`
            why = f"its connection failed: {exc}"
        self._end(why)

    def _hand(self, reply: dict[str, Any]) -> None:
        from agent_tui.provider.wire import error_from_json

        ident = reply.get("id")
        with self._lock:
            future = self._calls.pop(ident, None)  # type: ignore[arg-type]
            stream = self._streams.get(ident)  # type: ignore[arg-type]
        if future is not None:
            error = error_from_json(reply["err"]) if "err" in reply else None
            _settle(future, result=reply.get("ok"), error=error)
        elif stream is not None:
            _put(stream, reply)

    def _wait(self) -> int:
        """The process's exit code (negative: the signal), once."""
        with self._wait_lock:
            if self._status is None:
                try:
                    _, status = os.waitpid(self.pid, 0)
                    self._status = os.waitstatus_to_exitcode(status)
                except ChildProcessError:
                    self._status = 0
            return self._status

    def _end(self, why: str) -> None:
        """The process or connection is gone: everyone still waiting gets the error, or
        is sent again when the relay left without having read it (`bye` finished)."""
        from agent_tui.provider.wire import error_to_json

        if self.connection is None:
            code = self._wait()
            why = f"exit status {code}" if code >= 0 else f"signal {-code}"
        with self._lock:
            if self._ended is None:
                self._ended = why
            resend = self._bye == FINISHED and not self._closed
            error = self._gone()
            calls, self._calls = self._calls, {}
            streams, self._streams = list(self._streams.values()), {}
        for future in calls.values():
            _settle(future, error=_Resend() if resend else error)
        reply = {"resend": True} if resend else {"err": error_to_json(error)}
        for stream in streams:
            _put(stream, reply)

    def _gone(self) -> ProviderError:
        from agent_tui.errors import ProviderError

        if self.connection is not None and self._bye == STOPPED:
            return ProviderError(
                "agent-tui's relay was stopped (`agent-tui relay --stop --now`) "
                "while this request was under way. What was streamed is saved; the next "
                "request starts a new relay."
            )
        if self.connection is not None and self._bye == FINISHED:
            return ProviderError(
                "agent-tui's relay left before it read this request, and no new "
                "one took it; run the command again (`agent-tui relay` says why)."
            )
        if self.connection is not None:
            return ProviderError(
                "agent-tui's relay (litellm, shared by your commands) ended "
                f"unexpectedly ({self._ended or 'it stopped reading'}); its log is beside "
                "its socket (`agent-tui relay` shows where). What was streamed is saved; the "
                "next request starts a new relay."
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
        cancelled with it but go on in the relay, which saves them
        (provider/detached.py). False when there is no relay to take them."""
        self._leaving = self.connection is not None
        return self._leaving

    def close(self) -> None:
        """End the process at once: the command is done with it (every stream it still
        had is cancelled by now), and it may still be importing litellm, which would
        hold an orderly exit for seconds. Its connections close with it."""
        import contextlib
        import signal

        with self._reopen_lock, self._lock:
            self._closed = True
            if self._ended is None:
                self._ended = CLOSED
        if self.connection is not None:  # the relay stays for the next command
            with contextlib.suppress(OSError):
                self.connection.shutdown(2)  # SHUT_RDWR: the reader thread sees EOF
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self._wait()
        with contextlib.suppress(OSError):  # its output is the reader thread's: it sees EOF
            self._input.close()


def _settle(future: Future[Any], *, result: Any = None, error: BaseException | None = None) -> None:
    """A call's answer, unless its caller stopped waiting (a cancelled future)."""
    import contextlib
    from concurrent.futures import InvalidStateError

    with contextlib.suppress(InvalidStateError):
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)


def _put(stream: tuple[asyncio.AbstractEventLoop, asyncio.Queue[Any]], reply: Any) -> None:
    """A stream's reply, handed to its event loop (unless that loop has closed)."""
    import contextlib

    loop, replies = stream
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(replies.put_nowait, reply)


_process: ProviderProcess | None = None


def start(*, warm: bool = False, log: str | None = None) -> ProviderProcess | None:
    """Launch the provider process (once); None when it is switched off. `warm`: it
    also loads litellm's tokenizer once imported (the app: a person types for seconds
    before the first request; `run` sends its request at once and must not wait).
    `log`: a file for what it prints instead of this process's stderr."""
    _started()
    return _start(warm, log)


_starting: threading.Thread | None = None
"""The thread of `start_soon`, until `_started` has waited for it."""


def start_soon(*, warm: bool = False, log: str | None = None) -> None:
    """`start` on a thread: the app draws its first frame meanwhile, instead of waiting
    for a relay that was not running to listen. `start`, `current`, `describe` and `stop`
    wait for it."""
    import threading

    global _starting
    _starting = threading.Thread(target=_start, args=(warm, log), daemon=True)
    _starting.start()


def _started() -> None:
    global _starting
    thread, _starting = _starting, None
    if thread is not None:
        thread.join()


def _start(warm: bool, log: str | None) -> ProviderProcess | None:
    global _process
    if _setting() == "off":
        return None
    if _process is None:
        _process = _on_relay()
    if _process is None:
        try:
            _process = ProviderProcess(warm=warm, log=log)
        except OSError:  # cannot start one (its log, the interpreter): litellm imports here
            return None
    return _process


def leave() -> bool:
    """The command is ending: whether the relay takes over what it may leave (a
    summary being prepared: ProviderProcess.leave)."""
    return _process is not None and _process.leave()


_no_relay = "relay.idle is 0"
"""Why this command has no relay, when it has none (`/context`)."""


def _on_relay() -> ProviderProcess | None:
    """The person's relay (provider/relay.py), started if none runs; None when
    `relay.idle` is 0 or none can run or be reached here (then the command starts its
    own: `_no_relay` says why)."""
    global _no_relay
    from agent_tui.provider import relay

    try:
        idle = relay.idle_minutes()
        connection = relay.connect_or_start(idle) if idle > 0 else None
    except OSError as exc:  # its folder is not the person's, Unix sockets are refused…
        _no_relay = relay.unavailable() or f"its socket failed: {exc}"
        return None
    if connection is None and idle > 0:
        _no_relay = "it did not start in time (its log is beside its socket)"
    return ProviderProcess(connection=connection) if connection is not None else None


def current() -> ProviderProcess | None:
    _started()
    return _process


def describe() -> str:
    """For `/context`: where litellm runs for this command."""
    _started()
    if _process is None:
        return "Provider: litellm in this process."
    if _process.connection is not None:
        return (
            "Provider: your relay, shared by your commands (`agent-tui relay` shows "
            "it; `relay.idle` sets how long it stays unused)."
        )
    return f"Provider: a provider process of this command's own (no relay: {_no_relay})."


def stop() -> None:
    global _process
    _started()
    if _process is not None:
        _process.close()
        _process = None
