"""The provider process: litellm imported and called in a process of its own.

`agent-tui run` (and `compact`, `uncompact`) start it first thing (provider/remote.py).
litellm's import takes seconds of pure Python, and in one process the GIL adds every
other start-up cost to it: the config, the database, the session, the request. Here the
import runs on the machine's other core while the command does all of that, so the
first request leaves as soon as litellm is ready.

Protocol: one JSON object a line. In, on stdin: `{"id", "op": "stream", "request"}`
(a ModelRequest), `{"id", "op": "call", "name", "args"}` (a litellm function in
CALLS), `{"id", "op": "cancel"}`; the relay also answers `status`, `finish` and
`stop` (`agent-tui relay [--stop [--now]]`). Out, on the stdout it was started with:
`{"id", "e"}` (a ProviderEvent), `{"id", "end": true}`, `{"id", "ok"}` (a call's
result), or `{"id", "err"}` (an error: provider/wire.py); the relay's last line to
each command as it leaves is `{"bye": "finished"}` (none of its requests was under way:
it sends them again to a new relay) or `{"bye": "stopped"}` (cut by `--stop --now`).
Anything litellm prints goes to stderr instead, so it cannot break a line. End of stdin
ends the process: the command that started it has exited, however it ended. `--warm`
also loads the tokenizer once litellm is in; `--lazy` (AGENT_TUI_PROVIDER_PROCESS=lazy)
imports litellm at the first request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import signal
import socket
import sys
import threading
import time
from collections.abc import AsyncIterator
from typing import Any, BinaryIO

from agent_tui.provider import relay
from agent_tui.provider.wire import error_to_json

CALLS = ("get_model_info", "validate_environment")
"""The litellm functions the command asks for by name (provider/limits.py, auth.py)."""


class _Worker:
    """One command's requests and their replies (in shared mode, one per connection)."""

    def __init__(self, out: BinaryIO, pid: int = 0) -> None:
        self.out = out
        self.pid = pid
        """The command's process (the relay: its connection's peer)."""
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.kept: dict[int, dict[str, Any]] = {}
        """The detachable requests this command follows (provider/detached.py), by id."""

    def send(self, message: dict[str, Any]) -> None:
        self.out.write(json.dumps(message, default=str).encode() + b"\n")
        self.out.flush()

    async def serve(self, inbox: queue.SimpleQueue[bytes]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            self.handle(await loop.run_in_executor(None, inbox.get))

    def handle(self, line: bytes) -> None:
        message = json.loads(line)
        ident, op = message["id"], message["op"]
        if op == "cancel":
            if (request := self.kept.pop(ident, None)) is not None:
                from agent_tui.provider import detached

                detached.drop(request)  # the person stopped it: nobody saves it
            if (task := self.tasks.get(ident)) is not None:
                task.cancel()
            return
        if op in ("status", "finish", "stop"):
            self.send({"id": ident, "ok": _status()})
            if _relay is None and op != "status":
                _stop()
            elif op == "finish":  # the commands mid-request finish first
                _relay.finish()
            elif op == "stop":  # at once: the requests under way are cut
                _relay.leave("stopped")
            return
        handler = self.stream(ident, message) if op == "stream" else self.call(ident, message)
        task = self.tasks[ident] = asyncio.create_task(handler)
        task.add_done_callback(lambda _, ident=ident: self.tasks.pop(ident, None))

    async def stream(self, ident: int, message: dict[str, Any]) -> None:
        from agent_tui.provider import detached

        try:
            if _relay is not None and message["request"].get("detachable"):
                # Kept going when this command ends; the next sender gets it (detached.py).
                replies = detached.follow(message["request"], lambda: self._replies(message))
                self.kept[ident] = message["request"]
            else:
                replies = self._replies(message)
            async for reply in replies:
                self.send({"id": ident, **reply})
        except asyncio.CancelledError:
            return  # the command stopped listening (a kept request goes on)
        finally:
            self.kept.pop(ident, None)

    async def _replies(self, message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        from agent_tui.provider.stream import litellm_stream
        from agent_tui.provider.stream_events import ModelRequest

        try:
            request = ModelRequest.model_validate(message["request"])
            async for event in litellm_stream(request):
                yield {"e": event.model_dump(mode="json")}
        except asyncio.CancelledError:
            raise  # litellm_stream closed the connection
        except Exception as exc:
            yield {"err": error_to_json(exc)}
            return
        yield {"end": True}

    async def call(self, ident: int, message: dict[str, Any]) -> None:
        from agent_tui.provider.loader import load_litellm

        try:
            if message.get("name") not in CALLS:
                raise ValueError(f"not a provider call: {message.get('name')!r}")
            function = getattr(await load_litellm(), message["name"])
            result = await asyncio.to_thread(function, *message.get("args", []))
            self.send({"id": ident, "ok": dict(result) if result is not None else None})
        except Exception as exc:
            self.send({"id": ident, "err": error_to_json(exc)})


def _read(stream: BinaryIO, inbox: queue.SimpleQueue[bytes]) -> None:
    """Lines from the command, read from the start (while litellm imports), so the
    command never blocks writing a large request into a full pipe. Their end is the
    command's: this process ends at once, even in the middle of litellm's import."""
    for line in iter(stream.readline, b""):
        inbox.put(line)
    os._exit(0)


_started = time.time()
_relay: _Relay | None = None


LEAVING_TICK = 0.05
"""Seconds between two looks, while leaving, at whether a request is still under way."""


class _Relay:
    """The relay (provider/relay.py): connections on a Unix socket, each a
    command's requests; gone after `idle` seconds with none. Leaving (`finish`: `agent-tui
    relay --stop`, the idle time, its socket removed), it takes no new command and exits
    once no request is under way; `leave("stopped")` (`--stop --now`) cuts them."""

    def __init__(self, path: str, idle: float) -> None:
        self.path, self.idle = path, idle
        self.connections = 0
        self.served = 0
        self.last_seen = time.monotonic()
        # Before litellm's import: commands connect at once.
        self.server, self.inode = relay.listen_private(path)
        self.served_tasks: set[asyncio.Task[None]] = set()
        self.workers: set[_Worker] = set()
        self.leaving = False

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        self.server.setblocking(False)
        watch = asyncio.create_task(self._watch())
        try:
            while True:
                conn, _ = await loop.sock_accept(self.server)
                task = asyncio.create_task(self._serve(conn))
                self.served_tasks.add(task)
                task.add_done_callback(self.served_tasks.discard)
        finally:
            watch.cancel()

    async def _serve(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        self.connections += 1
        self.served += 1
        conn.setblocking(True)
        worker = _Worker(conn.makefile("wb"), relay.peer_pid(conn))
        self.workers.add(worker)
        inbox: asyncio.Queue[bytes | None] = asyncio.Queue()

        def read() -> None:
            with contextlib.suppress(OSError, ValueError):
                for line in conn.makefile("rb"):
                    loop.call_soon_threadsafe(inbox.put_nowait, line)
            loop.call_soon_threadsafe(inbox.put_nowait, None)

        threading.Thread(target=read, name="relay-connection", daemon=True).start()
        try:
            while (line := await inbox.get()) is not None:
                with contextlib.suppress(ValueError, KeyError, OSError):
                    worker.handle(line)
        finally:  # the command ended, however: what it still had running stops
            for task in list(worker.tasks.values()):
                task.cancel()
            self.workers.discard(worker)
            self.connections -= 1
            self.last_seen = time.monotonic()
            with contextlib.suppress(OSError):
                conn.close()

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(
                LEAVING_TICK if self.leaving else min(1.0, max(self.idle / 4, 0.05))
            )
            idle = self.connections == 0 and time.monotonic() - self.last_seen > self.idle
            if not relay.still_own(self.path, self.inode) or (self.idle > 0 and idle):
                self.finish()  # its socket removed or another's: no command finds it now
            if self.leaving and not self.working():
                self.leave("finished")

    def busy(self) -> list[int]:
        """The commands with a request under way here, by pid."""
        return sorted(worker.pid for worker in self.workers if worker.tasks)

    def working(self) -> bool:
        """A request under way: a command's, or a summary one left (provider/detached.py)."""
        return bool(self.busy()) or _summaries() > 0

    def finish(self) -> None:
        """Take no new command (the next one starts a new relay) and leave once no
        request is under way (`_watch`)."""
        self.leaving = True
        relay.remove_own(self.path, self.inode)

    def leave(self, why: str) -> None:
        """Exit now, telling each command why (`bye`): `finished` (none of its requests
        was under way: it sends any it just wrote to a new relay) or `stopped` (the
        requests under way are cut). Connections still waiting to be accepted get it too."""
        self.server.setblocking(False)
        with contextlib.suppress(OSError):
            while True:  # until BlockingIOError: nobody else can connect, the path is gone
                conn, _ = self.server.accept()
                conn.setblocking(True)
                self.workers.add(_Worker(conn.makefile("wb")))
        for worker in self.workers:
            with contextlib.suppress(OSError, ValueError):
                worker.send({"bye": why})
        _stop()

    def status(self) -> dict[str, Any]:
        others = self.connections - 1  # not the one asking
        idle = 0.0 if others else time.monotonic() - self.last_seen
        return {
            "connections": others,
            "served": self.served - 1,
            "idle_seconds": round(idle, 1),
            "idle_limit_seconds": self.idle,
            "socket": self.path,
            "busy": self.busy(),
            "summaries": _summaries(),
            "leaving": self.leaving,
        }


def _summaries() -> int:
    """The summaries being written that commands left here (provider/detached.py)."""
    detached = sys.modules.get("agent_tui.provider.detached")
    return detached.running() if detached is not None else 0


def _status() -> dict[str, Any]:
    rss = 0
    with contextlib.suppress(OSError, ValueError), open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    found = {"pid": os.getpid(), "uptime_seconds": round(time.time() - _started, 1)}
    found["rss_kb"] = rss
    found["litellm"] = "litellm" in sys.modules
    if "agent_tui.provider.detached" in sys.modules:
        found["kept_requests"] = sys.modules["agent_tui.provider.detached"].count()
    if _relay is not None:
        found.update(_relay.status())
    return found


def _stop() -> None:
    if _relay is not None:
        relay.remove_own(_relay.path, _relay.inode)
    os._exit(0)


def serve_relay(path: str, idle: float) -> None:
    """`--serve PATH --idle SECONDS`: the person's relay."""
    global _relay
    os.chdir("/")  # it serves every project: it holds none of them (a mount, a cleanup)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        _relay = _Relay(path, idle)
    except OSError as exc:  # another relay won the race: it serves
        print(f"agent-tui relay: not serving {path}: {exc}", file=sys.stderr)
        os._exit(0)
    from agent_tui.provider import loader

    loader.preload_in_background()  # litellm, then its tokenizer
    try:
        asyncio.run(_relay.run())
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        _stop()


def main() -> None:
    args = sys.argv[1:]
    if "--serve" in args:
        idle = float(args[args.index("--idle") + 1]) if "--idle" in args else 0.0
        serve_relay(args[args.index("--serve") + 1], idle)
        return
    # Ctrl+C reaches the whole process group: the command decides (it cancels the
    # stream, which closes the provider's connection here), this process never dies of it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # a stray print cannot break a line
    inbox: queue.SimpleQueue[bytes] = queue.SimpleQueue()
    threading.Thread(target=_read, args=(sys.stdin.buffer, inbox), daemon=True).start()
    from agent_tui.provider import loader

    if "--lazy" not in args:  # else the first request imports it
        module = loader.litellm()  # with what its first request imports (_warm_up)
        if "--warm" in args:  # its tokenizer, off the serving thread (see loader)
            threading.Thread(target=loader.warm_tokenizer, args=(module,), daemon=True).start()
    try:
        asyncio.run(_Worker(out).serve(inbox))
    except BaseException:  # a bug here: say what, the command reports the exit
        import traceback

        traceback.print_exc()
    finally:
        os._exit(1)  # serve never returns; tearing litellm down would cost seconds


if __name__ == "__main__":
    main()
