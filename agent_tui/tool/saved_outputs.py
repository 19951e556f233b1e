"""Full tool outputs saved under the data dir: capped in size, deleted after some days.

A saved output keeps its head and its tail (`truncation.max_saved_bytes` in all) with a
line saying what was cut from the middle; files older than `truncation.retention_days`
are deleted in the background when the engine starts.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import BinaryIO

from agent_tui.ids import new_id

log = logging.getLogger(__name__)

MARKER_ROOM = 200
"""Bytes of the cap set aside for the cut line."""
COPY_BLOCK_BYTES = 1024 * 1024
"""The tail is copied from the ring file in blocks of this size (memory stays small)."""
SAVED_PREFIX = "tool_"
"""Saved outputs are `tool_<id>.txt`; images a tool returned are `image_<sha256>.<ext>`
(tool/images.py); nothing else in the folder is ever deleted."""
IMAGE_PREFIX = "image_"
IMAGE_EXTENSIONS = ("png", "jpg", "gif", "webp")
EXPIRING_PATTERNS = (
    f"{SAVED_PREFIX}*.txt",
    *(f"{IMAGE_PREFIX}*.{ext}" for ext in IMAGE_EXTENSIONS),
)
DAY_SECONDS = 24 * 60 * 60


def human_size(size: int) -> str:
    """`512 bytes`, `50.0 KB`, `190.7 MB` (units of 1024, as the config's defaults)."""
    if size < 1024:
        return f"{size} bytes"
    units = ("KB", "MB", "GB")
    value, unit = size / 1024, 0
    while value >= 1024 and unit < len(units) - 1:
        value, unit = value / 1024, unit + 1
    return f"{value:.1f} {units[unit]}"


def cut_line(cut: int, total: int) -> str:
    return f"[... {human_size(cut)} cut from the middle of this {human_size(total)} output ...]"


def new_path(output_dir: Path) -> Path:
    return output_dir / f"{new_id('tool')}.txt"


def char_start(data: bytes, pos: int) -> int:
    """`pos` moved back to the start of the UTF-8 character it falls in."""
    back = 0
    while back < 3 and 0 < pos - back < len(data) and data[pos - back] & 0xC0 == 0x80:
        back += 1
    return pos - back


def skip_continuation(data: bytes) -> bytes:
    """`data` without the continuation bytes (10xxxxxx) of a character cut off before it."""
    start = 0
    while start < min(4, len(data)) and data[start] & 0xC0 == 0x80:
        start += 1
    return data[start:]


def _budgets(max_bytes: int) -> tuple[int, int]:
    head = (max_bytes - MARKER_ROOM) // 2
    return head, max_bytes - MARKER_ROOM - head


def cap_bytes(data: bytes, max_bytes: int) -> bytes:
    """`data` itself when it fits, else its head and tail around the cut line."""
    if len(data) <= max_bytes:
        return data
    head_size, tail_size = _budgets(max_bytes)
    head = data[: char_start(data, head_size)]
    tail = skip_continuation(data[-tail_size:])
    cut = len(data) - len(head) - len(tail)
    return head + f"\n{cut_line(cut, len(data))}\n".encode() + tail


def save_output(text: str, output_dir: Path, max_bytes: int) -> Path:
    """Save a whole output (at most `max_bytes`); return its path."""
    output_dir.mkdir(parents=True, exist_ok=True)
    path = new_path(output_dir)
    path.write_bytes(cap_bytes(text.encode("utf-8", "surrogatepass"), max_bytes))
    return path


class SavedOutputWriter:
    """Streams an output of any size into a file of at most `max_bytes`: the head is
    written as it comes, the rest goes round a ring file of fixed size, and at `close`
    the ring's end follows the head, after the cut line if anything was cut (the same
    bytes as `cap_bytes` of the whole output). Blocking: call it from a thread."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.total = 0
        self._max_bytes = max_bytes
        self._head_room, self._tail_size = _budgets(max_bytes)
        # Room for everything after a head that fits (it may end up to 3 bytes short,
        # where it would have split a character).
        self._ring_size = max_bytes - self._head_room + 3
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO = path.open("wb")
        self._ring: BinaryIO | None = None
        self._ring_written = 0

    def write(self, data: bytes) -> None:
        self.total += len(data)
        if self._head_room and self._ring is None:
            part = data[: self._head_room]
            if len(part) < len(data):  # the head ends here: not inside a character
                part = part[: char_start(data, len(part))]
                self._head_room = 0
            else:
                self._head_room -= len(part)
            self._file.write(part)
            data = data[len(part) :]
        if data:
            self._write_ring(data)

    def _write_ring(self, data: bytes) -> None:
        if self._ring is None:
            # Closed (and so deleted) in close().
            self._ring = tempfile.TemporaryFile(dir=self.path.parent)  # noqa: SIM115
            self._head_room = 0
        size = self._ring_size
        if len(data) > size:
            self._ring_written += len(data) - size
            data = data[-size:]
        offset = self._ring_written % size
        first = data[: size - offset]
        self._ring.seek(offset)
        self._ring.write(first)
        if len(first) < len(data):
            self._ring.seek(0)
            self._ring.write(data[len(first) :])
        self._ring_written += len(data)

    def _ring_blocks(self, skip: int) -> Iterator[bytes]:
        """The ring's bytes, oldest first, from the `skip`th on."""
        assert self._ring is not None
        size = self._ring_size
        length = min(self._ring_written, size)
        start = self._ring_written % size if self._ring_written > size else 0
        done = skip
        while done < length:
            offset = (start + done) % size
            self._ring.seek(offset)
            block = self._ring.read(min(COPY_BLOCK_BYTES, length - done, size - offset))
            yield block
            done += len(block)

    def close(self) -> None:
        try:
            if self._ring is None:
                pass
            elif self.total <= self._max_bytes:  # nothing to cut: the ring holds the rest
                self._file.writelines(self._ring_blocks(0))
            else:
                held = min(self._ring_written, self._ring_size)
                blocks = self._ring_blocks(held - self._tail_size)
                first = next(blocks, b"")
                kept = skip_continuation(first)
                tail = self._tail_size - (len(first) - len(kept))
                cut = self.total - self._file.tell() - tail
                self._file.write(f"\n{cut_line(cut, self.total)}\n".encode())
                self._file.write(kept)
                self._file.writelines(blocks)
        finally:
            if self._ring is not None:
                self._ring.close()
            self._file.close()


def delete_expired(output_dir: Path, retention_days: int) -> int:
    """Delete saved outputs and images last written (or, for an image, last read) more than
    `retention_days` ago; return how many."""
    if retention_days <= 0 or not output_dir.is_dir():
        return 0
    limit = time.time() - retention_days * DAY_SECONDS
    deleted = 0
    for path in (p for pattern in EXPIRING_PATTERNS for p in output_dir.glob(pattern)):
        with contextlib.suppress(OSError):  # gone already, or not ours to delete
            if path.is_file() and path.stat().st_mtime < limit:
                path.unlink()
                deleted += 1
    return deleted


def start_cleanup(output_dir: Path, retention_days: int) -> Future[int]:
    """`delete_expired` in a daemon thread (start-up must not wait for a big folder);
    the future says how many files went."""
    future: Future[int] = Future()

    def work() -> None:
        try:
            future.set_result(delete_expired(output_dir, retention_days))
        except Exception as exc:  # never take the app down over housekeeping
            log.warning("deleting old saved outputs failed: %r", exc)
            future.set_exception(exc)

    if retention_days <= 0:
        future.set_result(0)
    else:
        threading.Thread(target=work, name="agent-tui-saved-outputs", daemon=True).start()
    return future
