"""One loop per session across processes: an advisory lock file per session.

A process runs a session's loop only while it holds `flock(LOCK_EX)` on
`<database dir>/session-locks/<session id>.lock`. The app, `run`, the ACP agent and the
server all go through `Engine`, which takes it; within one process the Engine's own
busy check comes first, so a second front-end of the same process queues as before.

Why a lock file and not a row in SQLite:

- The kernel drops an flock when its holder dies, however it dies (SIGKILL, the OOM
  killer, a crash): a dead owner never blocks the session, and there is no liveness
  check and no takeover rule to get wrong. A row with the owner's pid and start time
  would need both, would be wrong when the pid belongs to another pid namespace (a
  container sharing the data dir), and would cost a write transaction on the database
  every writer shares.
- An flock belongs to the open file description: two engines in one process exclude
  each other exactly as two processes do. (POSIX `fcntl` record locks would not, and
  would be dropped when any descriptor of the file is closed.) The descriptor is not
  inherited by the commands tools start (close-on-exec), so a background job left by
  bash cannot keep a session locked.

The holder writes who it is (pid, front-end, since when) into the file for the "busy in
…" line; the lock, not the text, is the truth. The holder deletes the file while it
still holds it; a waiter that locked a file deleted meanwhile sees another inode at the
path and tries again, so two processes never both hold a session. A file left by a
killed holder is unlocked and is taken (and later deleted) by the next one.
POSIX only (Linux, macOS), and not on network file systems, where SQLite's own
locking is not reliable either.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from pydantic import BaseModel, ValidationError

from agent_tui.errors import StorageError
from agent_tui.ids import now_ms

LOCK_DIR = "session-locks"
"""Beside the database file: one lock file per session whose loop runs now."""


class LockHolder(BaseModel):
    """Who runs a session's loop, as written in its lock file."""

    pid: int = 0
    front_end: str = "agent-tui"
    """The command that holds it: `agent-tui run`, `the agent-tui app`, `agent-tui acp`, …"""
    since: int = 0
    """When it took the session (ms since the epoch)."""

    def describe(self) -> str:
        if not self.pid:  # the file was just created and not written yet
            return "another agent-tui process"
        return f"{self.front_end} (pid {self.pid})"


class SessionLock:
    """A held session lock; `release()` (idempotent) frees the session."""

    def __init__(self, session_id: str, path: Path, fd: int) -> None:
        self.session_id = session_id
        self.path = path
        self._fd: int | None = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        with contextlib.suppress(OSError):
            self.path.unlink()  # while still locked: see the module docstring
        os.close(fd)  # closing the only descriptor drops the flock


class SessionLocks:
    """The session locks of one database (its folder) for this process's front-end."""

    def __init__(self, folder: Path, front_end: str = "agent-tui") -> None:
        self.folder = folder
        self.front_end = front_end

    @classmethod
    def beside(cls, database: Path, front_end: str = "agent-tui") -> SessionLocks:
        return cls(database.parent / LOCK_DIR, front_end)

    def path(self, session_id: str) -> Path:
        return self.folder / f"{session_id}.lock"

    def try_acquire(self, session_id: str) -> SessionLock | None:
        """The session's lock, or None while another holder has it (never waits)."""
        path = self.path(session_id)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            while True:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    return None
                except BaseException:
                    os.close(fd)
                    raise
                if _same_file(fd, path):
                    break
                os.close(fd)  # its holder deleted it after we opened it: a new one, again
            holder = LockHolder(pid=os.getpid(), front_end=self.front_end, since=now_ms())
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.model_dump_json().encode(), 0)
        except OSError as exc:
            raise StorageError(
                f"Cannot lock session {session_id} in {self.folder}: {exc.strerror or exc}. "
                "agent-tui needs to create files in its data directory (AGENT_TUI_DATA_DIR)."
            ) from exc
        return SessionLock(session_id, path, fd)

    def holder(self, session_id: str) -> LockHolder | None:
        """Who runs the session's loop now; None when nobody does. A holder keeps its file
        until it lets go: with no file there is nothing to probe (`sessions` asks this of
        every session, in two folders: nothing is created for the asking)."""
        if not self.path(session_id).exists():
            return None
        probe = self.try_acquire(session_id)
        if probe is not None:
            probe.release()  # also deletes a file a killed holder left behind
            return None
        try:
            return LockHolder.model_validate_json(self.path(session_id).read_bytes())
        except (OSError, ValidationError):  # released, or not written yet, just now
            return LockHolder()


def _same_file(fd: int, path: Path) -> bool:
    try:
        opened, current = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino)
