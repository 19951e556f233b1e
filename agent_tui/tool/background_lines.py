"""How a background command is worded to the person, the same in the app's sidebar and in
`/bashes` (every view): its command shortened, how long it has run or how it ended, its
last line. Import-light (the sidebar is part of the app's first frame)."""

from __future__ import annotations

import signal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_tui.events import BackgroundCommand

ELLIPSIS = "…"
MARK = {"running": "◐", "exited": "●", "failed": "✕", "stopped": "■"}


def shorten(text: str, width: int) -> str:
    """One line of `text`, cut to `width` characters with an ellipsis."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: max(width - 1, 0)] + ELLIPSIS


def duration(ms: int) -> str:
    """'45s', '3m 07s', '2h 05m'."""
    seconds = max(ms, 0) // 1000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def killed_by(exit_code: int) -> str:
    """'killed by SIGKILL' for a negative exit code (a process's return code when a signal
    ended it), 'killed by signal 99' for a number that names no signal."""
    try:
        return f"killed by {signal.Signals(-exit_code).name}"
    except ValueError:
        return f"killed by signal {-exit_code}"


def ending(info: BackgroundCommand) -> str:
    """How it ended: 'exit 0', 'exit 2', 'killed by SIGKILL', 'stopped'."""
    if info.status == "stopped":
        return "stopped"
    code = info.exit_code
    return killed_by(code) if code is not None and code < 0 else f"exit {code}"


def state(info: BackgroundCommand, now: int) -> str:
    """'running 3m 07s', or how it ended and after how long."""
    if info.status == "running":
        return f"running {duration(now - info.started)}"
    return f"{ending(info)} after {duration((info.ended or now) - info.started)}"
