"""agent-tui in a pseudo-terminal, for the benchmarks that time what a person sees: the
first frame, and a typed key until it is drawn. The output is read on a thread as it
comes, with the time each chunk arrived; escape sequences are stripped before looking
for text (styles split words)."""

from __future__ import annotations

import fcntl
import math
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Sequence
from pathlib import Path

ANSI_SEQUENCE = re.compile(
    rb"\x1b(\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|[=>78])"
)


def visible(data: bytes) -> bytes:
    """The text written, without escape sequences."""
    return ANSI_SEQUENCE.sub(b"", data)


class PtyApp:
    """`agent-tui ARGS` in a pty of `size` (columns, rows), in `workdir`."""

    def __init__(
        self,
        workdir: Path,
        args: Sequence[str] = (),
        *,
        size: tuple[int, int] = (120, 36),
        env: dict[str, str] | None = None,
    ) -> None:
        self.workdir = workdir
        self.args = list(args)
        self.size = size
        self.env = env or {}
        self.chunks: list[tuple[float, bytes]] = []
        self._cond = threading.Condition()
        self._closed = False
        self.start = 0.0
        self.found = 0
        """The index of the chunk in which the last `wait_for` found its text."""

    def command(self) -> tuple[list[str], dict[str, str]]:
        """The argv and environment launched: agent-tui's (a subclass may launch another)."""
        exe = Path(sys.executable).with_name("agent-tui")
        return [str(exe), *self.args], {**os.environ, "TERM": "xterm-256color", **self.env}

    def __enter__(self) -> PtyApp:
        argv, env = self.command()
        self.master, slave = pty.openpty()
        columns, rows = self.size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        self.start = time.perf_counter()
        self.proc = subprocess.Popen(
            argv,
            cwd=self.workdir,
            env=env,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            start_new_session=True,
        )
        os.close(slave)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.05)
            except (OSError, ValueError):
                break
            if self._closed:
                break
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:
                break
            if not chunk:
                break
            with self._cond:
                self.chunks.append((time.perf_counter(), chunk))
                self._cond.notify_all()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    @property
    def mark(self) -> int:
        """An index into the output: `wait_for(..., since=mark)` looks only after it."""
        with self._cond:
            return len(self.chunks)

    def wait_for(
        self, text: bytes, *, since: int = 0, timeout: float = 20.0, raw: bool = False
    ) -> float:
        """The time (perf_counter) of the chunk that completed `text` on screen after
        chunk `since` (`raw`: in the bytes, escape sequences included); NaN on timeout.
        Looks at each new chunk with the tail of the ones before (linear in the output)."""
        deadline = time.perf_counter() + timeout
        window = b""
        keep = len(text) * 8 + 1024  # raw bytes of context: styles split the text
        seen = since
        with self._cond:
            while True:
                while seen < len(self.chunks):
                    at, chunk = self.chunks[seen]
                    window = window[-keep:] + chunk
                    seen += 1
                    if text in (window if raw else visible(window)):
                        self.found = seen - 1
                        return at
                left = deadline - time.perf_counter()
                if left <= 0 or self._closed:
                    return float("nan")
                self._cond.wait(left)

    def seen(self, text: bytes, since: int = 0) -> bool:
        """Whether `text` is on screen in the output after chunk `since` (now)."""
        return not math.isnan(self.wait_for(text, since=since, timeout=0))

    def type(self, data: bytes) -> float:
        """Write keys to the terminal; the time they were written."""
        at = time.perf_counter()
        os.write(self.master, data)
        return at

    def output(self) -> bytes:
        with self._cond:
            return b"".join(chunk for _, chunk in self.chunks)

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            for _ in range(2):  # Ctrl+C twice quits
                os.write(self.master, b"\x03")
                time.sleep(0.1)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self._closed = True
        self._reader.join(timeout=2)
        os.close(self.master)
