"""What a background command prints, kept with bounded memory and disk: decoded and
redacted as it streams, appended to a saved file (cut to its newest part when it grows
past `truncation.max_saved_bytes`), and held for the model's next read (task_output) up to
a limit past which the oldest unread output is dropped (the file still has it)."""

from __future__ import annotations

import asyncio
import codecs
from collections import deque
from pathlib import Path
from typing import BinaryIO

from agent_tui.config.settings import TruncationConfig
from agent_tui.redact import Redactor, StreamRedactor
from agent_tui.tool.saved_outputs import human_size, skip_continuation

MIN_UNREAD_CHARS = 64 * 1024
"""The least output held for the next read (else twice `truncation.max_bytes`)."""
LAST_LINES = 5
"""Lines of its output an exit notice repeats to the model."""
LINE_CHARS = 500
"""A remembered last line is cut to this many characters."""


class BackgroundOutput:
    """One background command's output: `feed` as it comes, `take_unread` for a read."""

    def __init__(self, path: Path, config: TruncationConfig, redactor: Redactor | None) -> None:
        self.path = path
        self.total_bytes = 0
        self._max_file = config.max_saved_bytes
        self._unread_limit = max(config.max_bytes * 2, MIN_UNREAD_CHARS)
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stream = StreamRedactor(redactor) if redactor is not None else None
        self._unread: deque[str] = deque()
        self._unread_chars = 0
        self.dropped_chars = 0
        """Unread output dropped since the last read (the saved file keeps it)."""
        self._lines: deque[str] = deque(maxlen=LAST_LINES)
        self._partial = ""
        self._file: BinaryIO | None = None
        self._written = 0
        self.write_error: str | None = None

    @property
    def last_line(self) -> str:
        newest = self.last_lines(1)
        return newest[0] if newest else ""

    def last_lines(self, count: int = LAST_LINES) -> list[str]:
        """Its newest lines (the one being printed included), at most `count`."""
        lines = [*self._lines, self._partial] if self._partial.strip() else list(self._lines)
        return [line[:LINE_CHARS] for line in lines[-count:]]

    async def feed(self, chunk: bytes) -> None:
        text = self._decoder.decode(chunk)
        if self._stream is not None:
            text = self._stream.feed_lines(text)
        await self._take(text)

    async def close(self) -> None:
        text = self._decoder.decode(b"", final=True)
        if self._stream is not None:
            text = self._stream.feed(text) + self._stream.finish()
        await self._take(text)
        if self._file is not None:
            file, self._file = self._file, None
            await asyncio.to_thread(file.close)

    def seed(self, text: str) -> None:
        """What a foreground command printed before it was sent here (its tool result
        holds it): its last lines only, not unread and not in this file."""
        self._remember_lines(text)

    def take_unread(self) -> tuple[str, int]:
        """(what it printed since the last read, characters dropped from it meanwhile)."""
        text, dropped = "".join(self._unread), self.dropped_chars
        self._unread.clear()
        self._unread_chars = self.dropped_chars = 0
        return text, dropped

    async def _take(self, text: str) -> None:
        if not text:
            return
        data = text.encode("utf-8", "surrogatepass")
        self.total_bytes += len(data)
        self._remember_lines(text)
        self._unread.append(text)
        self._unread_chars += len(text)
        while len(self._unread) > 1 and self._unread_chars > self._unread_limit:
            oldest = self._unread.popleft()
            self._unread_chars -= len(oldest)
            self.dropped_chars += len(oldest)
        if self.write_error is None:
            try:
                await asyncio.to_thread(self._write, data)
            except OSError as exc:
                self.write_error = exc.strerror or str(exc)

    def _remember_lines(self, text: str) -> None:
        *whole, self._partial = (self._partial + text).split("\n")
        self._partial = self._partial[-LINE_CHARS * 2 :]
        self._lines.extend(line.rstrip("\r") for line in whole[-LAST_LINES:] if line.strip())

    def _write(self, data: bytes) -> None:
        """Append (blocking); past the cap, the file keeps its newest half after a cut line."""
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = self.path.open("ab", buffering=0)  # readable as it comes
        self._file.write(data)
        self._written += len(data)
        if self._file.tell() <= self._max_file:
            return
        keep = self._max_file // 2
        with self.path.open("rb") as old:
            old.seek(-keep, 2)
            tail = skip_continuation(old.read())
        cut = self._written - len(tail)
        total = human_size(self._written)
        line = f"[... {human_size(cut)} cut from the start of this {total} output ...]\n"
        self._file.close()
        self._file = self.path.open("wb", buffering=0)
        self._file.write(line.encode() + tail)

    def describe_drop(self, dropped: int) -> str:
        return (
            f"[{human_size(dropped)} of earlier output was dropped before this read; "
            f"the saved output {self.path} keeps its newest part]"
        )
