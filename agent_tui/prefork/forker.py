"""The prefork: a process that has imported what `agent-tui run` needs (the CLI, the
config, the engine, the database layer; never litellm, which is the warm engine's) and
forks a child for each command that connects (prefork/handover.py). The child takes the
command's descriptors, directory, environment and arguments, and runs it as the command
would have; the prefork itself does nothing else, holds no project (it works in /), and
runs no thread, so a fork copies nothing half-done.

It listens on a Unix socket in the person's 0700 runtime folder, beside the engine, and
answers only its own user (SO_PEERCRED). It leaves when its socket is removed or
replaced, when its engine's socket is gone (`agent-tui engine --stop`, the engine's idle
exit), or after `--idle` seconds without a command.

    python -P -m agent_tui.prefork.forker --serve PATH --engine ENGINE_SOCKET --idle SECONDS
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import os
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any

from agent_tui.provider import shared

ACCEPT_WAIT = 1.0
"""Seconds between looks at its socket, its engine and its idle time."""
RECEIVE_WAIT = 10.0
"""Seconds a command has to send its request once connected."""
MAX_REQUEST = 1 << 20
PRELOADED = (
    "agent_tui.cli",
    "agent_tui.cli.prompt",
    "agent_tui.cli.person",
    "agent_tui.command.catalog",
    "agent_tui.session.opening",
    "agent_tui.provider.api",
    "agent_tui.provider.stream_events",
    "agent_tui.attach.target",
    "agent_tui.cli.headless",
)


def _preload() -> None:
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()  # kept as they are: the children share these pages with it


def _receive(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    message, fds, _, _ = socket.recv_fds(conn, 65536, 3)
    try:
        if len(fds) != 3 or len(message) < 4:
            raise ValueError("a request carries the command's three standard descriptors")
        (size,) = struct.unpack("!I", message[:4])
        if size > MAX_REQUEST:
            raise ValueError("request too large")
        data = message[4:]
        while len(data) < size:
            more = conn.recv(size - len(data))
            if not more:
                raise ValueError("the command left")
            data += more
        request = json.loads(data)
        if not isinstance(request, dict):
            raise ValueError("not a request")
        return request, fds
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise


def _stream(fd: int, spec: dict[str, Any], *, reading: bool) -> io.TextIOWrapper:
    """A standard stream on `fd` set up as the command's was (encoding, buffering)."""
    raw = io.FileIO(fd, "rb" if reading else "wb", closefd=False)
    unbuffered = bool(spec.get("write_through")) and not reading
    binary: Any = raw if unbuffered else (io.BufferedReader if reading else io.BufferedWriter)(raw)
    return io.TextIOWrapper(
        binary,
        encoding=spec.get("encoding") or "utf-8",
        errors=spec.get("errors") or "strict",
        line_buffering=bool(spec.get("line_buffering")),
        write_through=unbuffered,
    )


def _watch(conn: socket.socket) -> None:
    """The command is gone (however it ended, a kill -9 too) before its run ended: so is
    the run, as it would have been in its own process."""
    with contextlib.suppress(OSError):
        while conn.recv(1):
            pass
    os.kill(os.getpid(), signal.SIGKILL)


def _child(conn: socket.socket, fds: list[int], request: dict[str, Any]) -> None:
    """The command, in this forked child; never returns."""
    code = 1
    try:
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        streams = request.get("streams", {})
        sys.stdin = _stream(0, streams.get("stdin", {}), reading=True)
        sys.stdout = _stream(1, streams.get("stdout", {}), reading=False)
        sys.stderr = _stream(2, streams.get("stderr", {}), reading=False)
        sys.argv = [sys.argv[0], *request["argv"]]
        _name(f"agent-tui {request['argv'][0]}")
        conn.sendall(struct.pack("!i", os.getpid()))
        threading.Thread(target=_watch, args=(conn,), name="prefork-command", daemon=True).start()
        from agent_tui.entry import here

        code = here(list(request["argv"]))
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        with contextlib.suppress(OSError):
            conn.sendall(struct.pack("!i", code))
        os._exit(code)


def _name(title: str) -> None:
    """What `ps` and `top` show for this process (its command line stays the prefork's)."""
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(title[:15])


def _reap() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def serve(path: str, engine: str, idle: float) -> None:
    os.chdir("/")
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        listener, inode = shared.listen_private(path)
    except OSError as exc:  # another prefork won the race: it serves
        print(f"agent-tui prefork: not serving {path}: {exc}", file=sys.stderr)
        return
    _name("agent-tui fork")
    _preload()
    listener.settimeout(ACCEPT_WAIT)
    last = time.monotonic()
    try:
        while _still_wanted(path, inode, engine) and time.monotonic() - last < idle:
            _reap()
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            last = time.monotonic()
            _fork_for(listener, conn)
    finally:
        shared.remove_own(path, inode)


def _still_wanted(path: str, inode: int, engine: str) -> bool:
    return shared.still_own(path, inode) and os.path.exists(engine)


def _fork_for(listener: socket.socket, conn: socket.socket) -> None:
    with conn:
        conn.settimeout(RECEIVE_WAIT)  # a command that connects and says nothing blocks none
        try:
            if shared.peer(conn)[1] != os.getuid():  # only its own user
                return
            request, fds = _receive(conn)
        except (OSError, ValueError):
            return
        conn.settimeout(None)
        pid = os.fork()
        if pid == 0:
            listener.close()
            _child(conn, fds, request)
        for fd in fds:
            os.close(fd)


def main() -> None:
    args = sys.argv[1:]
    path = args[args.index("--serve") + 1]
    engine = args[args.index("--engine") + 1]
    idle = float(args[args.index("--idle") + 1]) if "--idle" in args else 1800.0
    serve(path, engine, idle)


if __name__ == "__main__":
    main()
