"""Capture a command's output with bounded memory: spill to a file past a size limit."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO

from agent_tui.config import TruncationConfig
from agent_tui.ids import new_id
from agent_tui.tool.truncation import (
    build_preview,
    format_truncated,
    truncate_output,
    truncation_marker,
)

MEMORY_LIMIT_BYTES = 10 * 1024 * 1024
"""Output kept in memory; beyond it the full output streams to a file in the output dir."""
SPOOL_FLUSH_BYTES = 1024 * 1024
"""Spilled output is written in batches of this size, off the event loop."""
MIN_TAIL_BYTES = 64 * 1024


class OutputCapture:
    """Collects output chunks; past MEMORY_LIMIT_BYTES keeps only a tail in memory."""

    def __init__(self, output_dir: Path, config: TruncationConfig) -> None:
        self.output_dir = output_dir
        self.config = config
        self.total_bytes = 0
        self.newlines = 0
        self.spool_path: Path | None = None
        self.spool_error: str | None = None
        self._ends_with_newline = False
        self._chunks: list[bytes] = []
        self._memory = 0
        self._spool: BinaryIO | None = None
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self._tail_limit = max(config.max_bytes * 2, MIN_TAIL_BYTES)

    @property
    def spilled(self) -> bool:
        return self.spool_path is not None

    @property
    def total_lines(self) -> int:
        partial = self.total_bytes > 0 and not self._ends_with_newline
        return self.newlines + (1 if partial else 0)

    async def feed(self, chunk: bytes) -> None:
        if not chunk:
            return
        self.total_bytes += len(chunk)
        self.newlines += chunk.count(b"\n")
        self._ends_with_newline = chunk.endswith(b"\n")
        if not self.spilled:
            self._chunks.append(chunk)
            self._memory += len(chunk)
            if self._memory > MEMORY_LIMIT_BYTES:
                await self._start_spill()
            return
        self._keep_tail(chunk)
        if self._spool is not None:
            self._pending.append(chunk)
            self._pending_bytes += len(chunk)
            if self._pending_bytes >= SPOOL_FLUSH_BYTES:
                await self._flush()

    async def close(self) -> None:
        if self._spool is None:
            return
        await self._flush()
        spool, self._spool = self._spool, None
        await asyncio.to_thread(spool.close)

    def render(self) -> tuple[str, dict[str, Any]]:
        """(output for the model, truncation metadata). Blocking: run it in a thread.

        The tail is kept: a command's last lines (errors, summaries) matter most.
        """
        if not self.spilled:
            text = b"".join(self._chunks).decode("utf-8", errors="replace")
            return truncate_output(text, self.config, self.output_dir, direction="tail")
        tail = b"".join(self._tail)
        # Skip continuation bytes of a character whose start fell off the kept tail.
        start = 0
        while start < min(4, len(tail)) and tail[start] & 0xC0 == 0x80:
            start += 1
        text = tail[start:].decode("utf-8", errors="replace")
        preview, shown, cut = build_preview(text, self.config, "tail")
        marker = truncation_marker(self.total_lines - shown, cut, "tail", self.config.max_bytes)
        assert self.spool_path is not None
        output = format_truncated(preview, marker, self.spool_path, "tail")
        metadata: dict[str, Any] = {
            "truncated": True,
            "output_path": str(self.spool_path),
            "total_lines": self.total_lines,
            "total_bytes": self.total_bytes,
        }
        if self.spool_error:
            output += (
                f"\n(The saved file is incomplete: writing it failed with {self.spool_error}.)"
            )
            metadata["spool_error"] = self.spool_error
        return output, metadata

    def _keep_tail(self, chunk: bytes) -> None:
        self._tail.append(chunk)
        self._tail_bytes += len(chunk)
        while len(self._tail) > 1 and self._tail_bytes - len(self._tail[0]) >= self._tail_limit:
            self._tail_bytes -= len(self._tail.popleft())

    async def _start_spill(self) -> None:
        self.spool_path = self.output_dir / f"{new_id('tool')}.txt"
        chunks, self._chunks, self._memory = self._chunks, [], 0
        for chunk in chunks:
            self._keep_tail(chunk)
        try:
            self._spool = await asyncio.to_thread(_open_spool, self.spool_path)
        except OSError as exc:
            self.spool_error = exc.strerror or str(exc)
            return
        self._pending, self._pending_bytes = chunks, sum(len(c) for c in chunks)
        await self._flush()

    async def _flush(self) -> None:
        if self._spool is None or not self._pending:
            return
        chunks, self._pending, self._pending_bytes = self._pending, [], 0
        try:
            await asyncio.to_thread(self._spool.writelines, chunks)
        except OSError as exc:
            self.spool_error = exc.strerror or str(exc)
            spool, self._spool = self._spool, None
            with contextlib.suppress(OSError):
                await asyncio.to_thread(spool.close)


def _open_spool(path: Path) -> BinaryIO:
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.open("wb")
