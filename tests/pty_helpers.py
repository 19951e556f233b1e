"""`agent-tui` (the app) in a real pseudo-terminal: what a person sees, keys typed at any
moment, the exit code and what it printed once the terminal was given back."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

from agent_tui import procs
from tests.process_helpers import agent_tui_argv

ROOT = Path(__file__).resolve().parent.parent
DEADLINE = 120.0
"""Only against a hang, never a measure of speed (a loaded machine starts the app slowly)."""
ANSI_SEQUENCE = re.compile(
    rb"\x1b(\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|[=>78])"
)
ALT_SCREEN = b"\x1b[?1049h"
"""Textual switches to it when it starts: what comes after is the app's own screen."""


def visible(data: bytes) -> bytes:
    return ANSI_SEQUENCE.sub(b"", data)


def _take_terminal() -> None:
    """In the child: a session of its own, with its stdin as the controlling terminal."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyAgent:
    """`python -m agent_tui ARGS` in `project`, in a 120×36 pty, this checkout first."""

    def __init__(
        self,
        project: Path,
        *args: str,
        size: tuple[int, int] = (120, 36),
        env: dict[str, str] | None = None,
        controlling: bool = False,
    ) -> None:
        """`controlling`: the pty is the process's controlling terminal, as in a real
        one: Ctrl+C typed while the terminal is not in raw mode is SIGINT."""
        environ = {k: v for k, v in os.environ.items() if k != procs.OWNER_ENV}
        environ.update({"PYTHONPATH": str(ROOT), "TERM": "xterm-256color", **(env or {})})
        self.master, slave = pty.openpty()
        columns, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.proc = subprocess.Popen(
            agent_tui_argv(*args),
            cwd=project,
            env=environ,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=not controlling,
            preexec_fn=_take_terminal if controlling else None,
        )
        os.close(slave)
        self.output = b""

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def _read(self, timeout: float) -> bool:
        """Read what is there (waiting up to `timeout`); False at the end of output."""
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.master, 1 << 16)
        except OSError:  # EIO: the process closed the terminal
            return False
        self.output += chunk
        return bool(chunk)

    def app_screen(self) -> bytes:
        """The text the app drew (after it took the screen), escape sequences removed."""
        _, _, after = self.output.partition(ALT_SCREEN)
        return visible(after)

    def wait_for(self, text: bytes, deadline: float = DEADLINE) -> None:
        """Until `text` is on the app's screen; TimeoutError with what was drawn."""
        end = time.monotonic() + deadline
        while text not in self.app_screen():
            if time.monotonic() > end or not self._read(0.1):
                raise TimeoutError(f"{text!r} not drawn: {self.app_screen()[-2000:]!r}")

    def finish(self, deadline: float = DEADLINE) -> tuple[int, str]:
        """Wait for the process to end: (exit code, everything it wrote, visible text)."""
        end = time.monotonic() + deadline
        while self._read(0.1):
            if time.monotonic() > end:
                self.kill()
                raise TimeoutError(f"agent-tui did not exit: {visible(self.output)[-2000:]!r}")
        code = self.proc.wait(timeout=max(end - time.monotonic(), 1))
        os.close(self.master)
        return code, visible(self.output).decode(errors="replace")

    def quit(self) -> int:
        """Ctrl+C twice, as a person quits; the exit code."""
        self.type(b"\x03")
        self.type(b"\x03")
        return self.finish()[0]

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
