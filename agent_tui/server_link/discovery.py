"""server.json in the data dir: the running server's URL, pid and token, so that
`run.attach: auto` finds it. Written (0600) when the server listens, removed when it stops;
a file whose process is gone is stale and ignored. A leaf, read on `run`'s fast path."""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from agent_tui import paths

STATE_FILE = "server.json"


@dataclass
class RunningServer:
    url: str
    pid: int
    token: str


def state_path() -> Path:
    return paths.data_dir() / STATE_FILE


def write_state(server: RunningServer) -> None:
    path = state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{STATE_FILE}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        json.dump(asdict(server), file)
    os.replace(temporary, path)


def remove_state(pid: int) -> None:
    """Remove the file if it is this server's (another may have started since)."""
    if (found := _read()) is not None and found.pid == pid:
        with contextlib.suppress(OSError):
            state_path().unlink()


def _read() -> RunningServer | None:
    try:
        data = json.loads(state_path().read_text(encoding="utf-8"))
        return RunningServer(url=str(data["url"]), pid=int(data["pid"]), token=str(data["token"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # someone else's process: alive, though not likely ours
    except OSError:  # ProcessLookupError: none
        return False
    return True


def running_server() -> RunningServer | None:
    """The server on this machine, if its file names a live process."""
    found = _read()
    return found if found is not None and alive(found.pid) else None
