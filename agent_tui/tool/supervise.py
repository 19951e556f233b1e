"""Runs one background command and ends everything of its agent-tui when agent-tui dies.

Started by tool/background.py as `python -I supervise.py FD COMMAND...` at the head of the
command's process group, with FD the read end of a pipe whose write end only agent-tui
holds. The command runs as its child; its exit is this process's exit (a signal is raised
again), so agent-tui sees the command's own status. When the pipe reads end of file,
agent-tui is gone (a SIGKILL, a crash): every process carrying its owner marker
(procs.OWNER_ENV), setsid'd ones included, is killed, then this group. A background
command so never outlives a killed agent-tui, where the next start's reap (procs.py)
would come late or never. In the sandbox, bubblewrap's --die-with-parent and its PID
namespace end the sandboxed processes with it as well.

Standard library only, no agent_tui import: it starts in a few tens of milliseconds under
`-I` and cannot fail on the project's imports."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading

OWNER_ENV = "AGENT_TUI_OWNER"  # procs.OWNER_ENV: this file imports nothing of agent_tui
PROC = "/proc"


def _marked(token: str) -> list[int]:
    """(Linux) Every live process but this one whose marker is `token`."""
    if not token or not os.path.isdir(PROC):
        return []
    key, found = f"{OWNER_ENV}={token}".encode(), []
    for name in os.listdir(PROC):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        with contextlib.suppress(OSError), open(f"{PROC}/{name}/environ", "rb") as file:
            if key in file.read().split(b"\0"):
                found.append(int(name))
    return found


def _end_everything() -> None:
    """agent-tui died: its marked processes, then this group (this process too)."""
    for pid in _marked(os.environ.get(OWNER_ENV, "")):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    os.killpg(os.getpgrp(), signal.SIGKILL)


def _watch(fd: int) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 1):
            pass
    _end_everything()


def _exit_as(code: int) -> None:
    """Exit as the command did: its code, or the signal that ended it."""
    if code >= 0:
        sys.exit(code)
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    sys.exit(128 - code)


def main(argv: list[str]) -> None:
    fd, command = int(argv[1]), argv[2:]
    # A stop signals the whole group: this process outlives the command to report its
    # exit (a handler, unlike SIG_IGN, is reset for the command by exec).
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: None)
    child = subprocess.Popen(command, close_fds=True)  # the pipe stays here alone
    threading.Thread(target=_watch, args=(fd,), daemon=True).start()
    while True:
        with contextlib.suppress(InterruptedError):
            _exit_as(child.wait())


if __name__ == "__main__":
    main(sys.argv)
