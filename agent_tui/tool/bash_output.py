"""Capture a command's output with bounded memory: decoded and redacted as it streams;
past a size limit only a tail stays in memory and the rest streams to a saved file."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_tui.config.settings import TruncationConfig
from agent_tui.redact import Redactor, StreamRedactor
from agent_tui.tool.saved_outputs import SavedOutputWriter, new_path
from agent_tui.tool.truncation import truncate_output, truncated_output, utf8_len

MEMORY_LIMIT_CHARS = 10 * 1024 * 1024
"""Output kept in memory; beyond it the output streams to a file in the output dir."""
SPOOL_FLUSH_CHARS = 1024 * 1024
"""Spilled output is written in batches of this size, off the event loop."""
MIN_TAIL_CHARS = 64 * 1024


class OutputCapture:
    """Collects output chunks; past MEMORY_LIMIT_CHARS keeps only a tail in memory.

    With a redactor, secrets are replaced before anything is kept or written, so the
    saved file holds no more than the model sees.
    """

    def __init__(
        self,
        output_dir: Path,
        config: TruncationConfig,
        redactor: Redactor | None = None,
        on_text: Callable[[str], None] | None = None,
    ) -> None:
        self.on_text = on_text
        """Called with each piece of output as it arrives (decoded, NOT yet redacted: the
        stream redactor holds text back; the caller redacts what it shows)."""
        self.output_dir = output_dir
        self.config = config
        self.total_bytes = 0
        """UTF-8 bytes of the output as kept (decoded, redacted)."""
        self.newlines = 0
        self.spool_path: Path | None = None
        self.spool_error: str | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._stream = StreamRedactor(redactor) if redactor is not None else None
        self._ends_with_newline = False
        self._pieces: list[str] = []
        self._memory = 0
        self._writer: SavedOutputWriter | None = None
        self._pending: list[str] = []
        self._pending_chars = 0
        self._tail: deque[str] = deque()
        self._tail_chars = 0
        self._tail_limit = max(config.max_bytes * 2, MIN_TAIL_CHARS)

    @property
    def spilled(self) -> bool:
        return self.spool_path is not None

    @property
    def redactions(self) -> int:
        return self._stream.count if self._stream is not None else 0

    @property
    def total_lines(self) -> int:
        partial = self.total_bytes > 0 and not self._ends_with_newline
        return self.newlines + (1 if partial else 0)

    async def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        text = self._decoder.decode(chunk)
        if text and self.on_text is not None:
            self.on_text(text)
        if self._stream is not None:
            text = self._stream.feed(text)
        await self._take(text)

    async def close(self) -> None:
        text = self._decoder.decode(b"", final=True)
        if self._stream is not None:
            text = self._stream.feed(text) + self._stream.finish()
        await self._take(text)
        if self._writer is None:
            return
        await self._flush()
        writer, self._writer = self._writer, None
        try:
            await asyncio.to_thread(writer.close)
        except OSError as exc:
            self.spool_error = exc.strerror or str(exc)

    def render(self) -> tuple[str, dict[str, Any]]:
        """(output for the model, truncation metadata). Blocking: run it in a thread.

        The tail is kept: a command's last lines (errors, summaries) matter most.
        """
        if not self.spilled:
            text = "".join(self._pieces)
            return truncate_output(text, self.config, self.output_dir, direction="tail")
        assert self.spool_path is not None
        output, metadata = truncated_output(
            "".join(self._tail),
            self.config,
            self.spool_path,
            "tail",
            self.total_lines,
            self.total_bytes,
        )
        if self.spool_error:
            output += (
                f"\n(The saved file is incomplete: writing it failed with {self.spool_error}.)"
            )
            metadata["spool_error"] = self.spool_error
        return output, metadata

    async def _take(self, text: str) -> None:
        if not text:
            return
        self.total_bytes += utf8_len(text)
        self.newlines += text.count("\n")
        self._ends_with_newline = text.endswith("\n")
        if not self.spilled:
            self._pieces.append(text)
            self._memory += len(text)
            if self._memory > MEMORY_LIMIT_CHARS:
                await self._start_spill()
            return
        self._keep_tail(text)
        if self._writer is not None:
            self._pending.append(text)
            self._pending_chars += len(text)
            if self._pending_chars >= SPOOL_FLUSH_CHARS:
                await self._flush()

    def _keep_tail(self, text: str) -> None:
        self._tail.append(text)
        self._tail_chars += len(text)
        while len(self._tail) > 1 and self._tail_chars - len(self._tail[0]) >= self._tail_limit:
            self._tail_chars -= len(self._tail.popleft())

    async def _start_spill(self) -> None:
        self.spool_path = new_path(self.output_dir)
        pieces, self._pieces, self._memory = self._pieces, [], 0
        for piece in pieces:
            self._keep_tail(piece)
        try:
            self._writer = await asyncio.to_thread(
                SavedOutputWriter, self.spool_path, self.config.max_saved_bytes
            )
        except OSError as exc:
            self.spool_error = exc.strerror or str(exc)
            return
        self._pending, self._pending_chars = pieces, sum(len(p) for p in pieces)
        await self._flush()

    async def _flush(self) -> None:
        if self._writer is None or not self._pending:
            return
        pieces, self._pending, self._pending_chars = self._pending, [], 0
        try:
            await asyncio.to_thread(_write_text, self._writer, pieces)
        except OSError as exc:
            self.spool_error = exc.strerror or str(exc)
            writer, self._writer = self._writer, None
            with contextlib.suppress(OSError):
                await asyncio.to_thread(writer.close)


def _write_text(writer: SavedOutputWriter, pieces: list[str]) -> None:
    for piece in pieces:
        writer.write(piece.encode("utf-8", "surrogatepass"))
