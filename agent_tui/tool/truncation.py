"""Truncate one tool output: keep a preview, save the full text, tell the model where it is."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

from agent_tui.config.settings import TruncationConfig
from agent_tui.tool.saved_outputs import char_start, save_output, skip_continuation

Direction = Literal["head", "tail"]

HINT = (
    "The tool call succeeded but the output was truncated. Full output saved to: {path}\n"
    "Use the read tool with offset/limit to view specific sections, "
    "or grep to search the full content."
)


def utf8_len(text: str) -> int:
    # isascii() is a fast scan without allocating; only non-ASCII text pays for encoding.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def count_lines(text: str) -> int:
    """Lines as an editor counts them: a trailing newline does not start a new line."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def cut_utf8(text: str, max_bytes: int, *, from_end: bool = False) -> str:
    """The longest head (or tail) of `text` that fits in `max_bytes`, never splitting a char."""
    # A char is at most 4 bytes, so this slice already holds every char that could fit.
    window = text[-max_bytes:] if from_end else text[:max_bytes]
    data = window.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return window
    cut = skip_continuation(data[-max_bytes:]) if from_end else data[: char_start(data, max_bytes)]
    return cut.decode("utf-8", "surrogatepass")


def _next_line(text: str, pos: int, direction: Direction) -> tuple[int, int]:
    """(start, end) of the line after (head) or before (tail) position `pos`."""
    if direction == "head":
        newline = text.find("\n", pos)
        return pos, len(text) if newline == -1 else newline + 1
    # `pos` is the end of the previous (later) line; its own newline is at pos - 1.
    return text.rfind("\n", 0, pos - 1) + 1, pos


def build_preview(
    text: str, config: TruncationConfig, direction: Direction
) -> tuple[str, int, bool]:
    """(preview, lines shown, whether a line was cut): whole lines while they fit; a line
    is cut (never mid-character) only when not even one whole line fits."""
    kept: list[str] = []
    used = 0
    cut = False
    pos = 0 if direction == "head" else len(text)
    while len(kept) < config.max_lines and (pos < len(text) if direction == "head" else pos > 0):
        start, end = _next_line(text, pos, direction)
        line = text[start:end]
        size = utf8_len(line)
        if used + size > config.max_bytes:
            if not kept:
                kept.append(cut_utf8(line, config.max_bytes, from_end=direction == "tail"))
                cut = True
            break
        kept.append(line)
        used += size
        pos = end if direction == "head" else start
    if direction == "tail":
        kept.reverse()
    return "".join(kept).rstrip("\n"), len(kept), cut


def truncation_marker(removed_lines: int, cut: bool, direction: Direction, max_bytes: int) -> str:
    """`... N lines truncated ...`, saying so when the one line shown was cut as well."""
    parts = [f"{removed_lines} lines truncated"] if removed_lines else []
    if cut:
        which = "first" if direction == "head" else "last"
        parts.append(f"the {which} line was cut to {max_bytes} bytes")
    return f"... {'; '.join(parts)} ..."


def truncated_output(
    text: str, config: TruncationConfig, path: Path, direction: Direction, lines: int, size: int
) -> tuple[str, dict[str, Any]]:
    """The preview of an output of `lines` lines and `size` bytes whose whole is saved at
    `path`, with the marker and the hint where it is; and its metadata."""
    preview, shown, cut = build_preview(text, config, direction)
    marker = truncation_marker(lines - shown, cut, direction, config.max_bytes)
    first, second = (preview, marker) if direction == "head" else (marker, preview)
    return f"{first}\n\n{second}\n\n{HINT.format(path=path)}", {
        "truncated": True,
        "output_path": str(path),
        "total_lines": lines,
        "total_bytes": size,
    }


def truncate_output(
    text: str,
    config: TruncationConfig,
    output_dir: Path,
    *,
    direction: Direction = "head",
) -> tuple[str, dict[str, Any]]:
    """Return (text, {"truncated": False}) when it fits, else a preview and where the rest is."""
    total_lines = count_lines(text)
    total_bytes = utf8_len(text)
    if total_lines <= config.max_lines and total_bytes <= config.max_bytes:
        return text, {"truncated": False}
    path = save_output(text, output_dir, config.max_saved_bytes)
    return truncated_output(text, config, path, direction, total_lines, total_bytes)


async def truncate_output_async(
    text: str,
    config: TruncationConfig,
    output_dir: Path,
    *,
    direction: Direction = "head",
) -> tuple[str, dict[str, Any]]:
    """`truncate_output` off the event loop (saving a large output takes a while)."""
    if len(text) <= config.max_bytes // 4 and text.count("\n") < config.max_lines:
        # Certainly fits (a char is at most 4 bytes): no thread hop for the common case.
        return text, {"truncated": False}
    return await asyncio.to_thread(truncate_output, text, config, output_dir, direction=direction)
