"""The command's side of the prefork (prefork/forker.py): `agent-tui run` hands itself to
a child of a process that has imported agent-tui already, instead of importing it again
(most of the time from launch to the first request on a warm engine; the figures are
in docs/performance.md).

What crosses: the arguments, the working directory, the whole environment, how the
standard streams are set up, and the three standard descriptors themselves
(SCM_RIGHTS): the child writes to this terminal or pipe, reads this stdin, and runs in
this directory with this PATH and these variables, as this process would have. This
process waits, forwards the signals it gets (Ctrl+C, SIGTERM, SIGHUP) to the child, and
exits with the child's code. If it dies however it dies, the child sees the connection
end and kills itself with SIGKILL: a kill -9 of `run` stays a kill -9 of the run.

None answers (no prefork yet, another version's, `AGENT_TUI_ENGINE=0`): the command runs
here as before, and starts a prefork for the next one.

Import-light (os, sys, socket, struct, json, hashlib): `__main__` asks before anything else.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path
from typing import Any

PREFORK_ENV = "AGENT_TUI_PREFORK"
"""0: every `run` in a process of its own (the warm engine stays)."""
COMMANDS = ("run",)
"""Headless commands a prefork runs (the app needs the terminal as its own)."""
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
LOST = 1
"""The exit code when the child ended without saying how (it was killed)."""


def socket_name() -> Path:
    """The prefork of this install and environment (the engine's name), import path
    (sys.path without its first entry, the working directory under `python -m`), and
    what Python's start-up reads (PYTHON*, the locale)."""
    from agent_tui.provider import shared

    digest = hashlib.sha256(shared.engine_key().encode())
    digest.update("\0".join(sys.path[1:]).encode())
    for name, value in sorted(os.environ.items()):  # what Python's start-up reads
        if name.startswith(("PYTHON", "LC_")) or name == "LANG":
            digest.update(f"\0{name}={value}".encode())
    return shared.runtime_dir() / f"fork-{digest.hexdigest()[:16]}.sock"


def try_run(argv: list[str]) -> int | None:
    """The command's exit code when a prefork ran it; None: run it in this process."""
    if not argv or argv[0] not in COMMANDS or any(a in ("-h", "--help") for a in argv[1:]):
        return None
    from agent_tui.provider import shared

    if shared.switched_off(shared.ENGINE_ENV) or shared.switched_off(PREFORK_ENV):
        return None
    try:
        path = socket_name()
    except OSError:
        return None
    conn = shared.connect(path)
    if conn is None:
        _start(path)
        return None
    with conn:
        return _run_in(conn, argv)


def _start(path: Path) -> None:
    """A prefork for the next command (this one goes on here), when the engine is on."""
    from agent_tui.provider import shared

    idle = shared.idle_minutes()
    if idle <= 0:
        return
    try:
        engine = shared.socket_path()
        argv = [sys.executable, "-P", "-m", "agent_tui.prefork.forker", "--serve", str(path)]
        argv += ["--engine", str(engine), "--idle", str(idle * 60)]
        found = shared.start_once(path, argv, wait=False)
    except OSError:
        return
    if found is not None:  # one answered after all
        found.close()


def _streams() -> dict[str, Any]:
    found = {}
    for name in ("stdin", "stdout", "stderr"):
        stream = getattr(sys, name)
        found[name] = {
            "encoding": getattr(stream, "encoding", None) or "utf-8",
            "errors": getattr(stream, "errors", None) or "strict",
            "line_buffering": bool(getattr(stream, "line_buffering", False)),
            "write_through": bool(getattr(stream, "write_through", False)),
        }
    return found


def _run_in(conn: socket.socket, argv: list[str]) -> int | None:
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "streams": _streams()}
    data = json.dumps(request).encode()
    message = struct.pack("!I", len(data)) + data
    try:
        sent = socket.send_fds(conn, [message], [0, 1, 2])
        conn.sendall(message[sent:])
        pid = _number(conn)
    except OSError:  # a closed stdin, the prefork gone meanwhile: run here
        return None
    if pid is None:
        return None  # it could not fork: nothing ran
    forwarded: list[int] = []

    def forward(sig: int, _: object) -> None:
        forwarded.append(sig)
        with contextlib.suppress(OSError):  # it has just ended
            os.kill(pid, sig)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        code = _number(conn)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if code is not None:
        return code
    if forwarded:  # it died of the signal this process was sent: so does this one
        signal.signal(forwarded[-1], signal.SIG_DFL)
        os.kill(os.getpid(), forwarded[-1])
    print(f"agent-tui: the command's process ({pid}) ended unexpectedly.", file=sys.stderr)
    return LOST


def _number(conn: socket.socket) -> int | None:
    """A signed 4-byte number from the prefork; None at the connection's end."""
    data = b""
    while len(data) < 4:
        more = conn.recv(4 - len(data))  # retried after a forwarded signal (PEP 475)
        if not more:
            return None
        data += more
    return int(struct.unpack("!i", data)[0])
