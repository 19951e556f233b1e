"""File helpers shared by the tools: binary detection, diffs, reads and writes through the
editor, suggestions."""

from __future__ import annotations

import asyncio
import difflib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_tui import paths

if TYPE_CHECKING:
    from agent_tui.tool.base import EditorFiles

# Folders grep and glob never descend into: tooling, caches and dependencies.
# fmt: off
SKIP_DIRS = frozenset({
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", ".tox",
})
# fmt: on

BINARY_SNIFF_BYTES = 8192
DIFF_MAX_CHARS = 2 * 1024 * 1024
"""Texts larger than this are not diffed (difflib is slow on huge inputs)."""

# fmt: off
BINARY_EXTENSIONS = frozenset({
    ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".webp", ".tiff", ".psd", ".pdf", ".zip",
    ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar", ".war", ".exe", ".dll",
    ".so", ".dylib", ".o", ".a", ".lib", ".obj", ".class", ".pyc", ".pyo", ".whl", ".egg",
    ".bin", ".dat", ".db", ".sqlite", ".sqlite3", ".mp3", ".mp4", ".wav", ".flac", ".ogg",
    ".avi", ".mov", ".mkv", ".webm", ".woff", ".woff2", ".ttf", ".otf", ".eot", ".doc", ".docx",
    ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".wasm", ".pack", ".idx", ".parquet", ".npy",
    ".npz", ".pkl", ".pt", ".onnx", ".safetensors",
})
# fmt: on


def looks_binary(head: bytes) -> bool:
    return b"\0" in head


def binary_reason(path: Path) -> str | None:
    """Why `path` is a binary file (extension or a NUL byte), or None for text."""
    if path.suffix.lower() in BINARY_EXTENSIONS:
        return f"its extension is {path.suffix}"
    with path.open("rb") as handle:
        if looks_binary(handle.read(BINARY_SNIFF_BYTES)):
            return f"it contains a NUL byte in its first {BINARY_SNIFF_BYTES // 1024} KB"
    return None


def unified_diff(old: str, new: str, name: str) -> str:
    """A git-style unified diff of two texts (empty when they are equal)."""
    if len(old) + len(new) > DIFF_MAX_CHARS:
        return f"(diff of {name} not shown: the file is too large)"
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    diff = difflib.unified_diff(old_lines, new_lines, f"a/{name}", f"b/{name}")
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in diff
    )


def change_metadata(path: Path, diff: str) -> dict[str, Any]:
    """What edit and write report of a file they changed: its diff and the lines it adds
    and deletes."""
    lines = diff.splitlines()
    additions = sum(line.startswith("+") and not line.startswith("+++") for line in lines)
    deletions = sum(line.startswith("-") and not line.startswith("---") for line in lines)
    return {"files": [str(path)], "diff": diff, "additions": additions, "deletions": deletions}


def similar_names(path: Path, limit: int = 3) -> list[str]:
    """Names in the same folder that look like `path`'s name (for 'did you mean')."""
    try:
        names = [entry.name for entry in os.scandir(path.parent)]
    except OSError:
        return []
    wanted = path.name.lower()
    close = difflib.get_close_matches(path.name, names, n=limit, cutoff=0.5)
    related = [n for n in names if n not in close and (wanted in n.lower() or n.lower() in wanted)]
    return (close + sorted(related))[:limit]


def not_found_message(path: Path) -> str:
    message = f"File not found: {path}"
    if not path.parent.is_dir():
        return f"{message} (the folder {path.parent} does not exist either)."
    if suggestions := similar_names(path):
        joined = ", ".join(str(path.parent / name) for name in suggestions)
        return f"{message}. Did you mean: {joined}?"
    return f"{message}."


def os_error_message(exc: OSError) -> str:
    """A one-line, person-readable description of an OSError."""
    target = f": {exc.filename}" if exc.filename else ""
    if isinstance(exc, PermissionError):
        return f"Permission denied{target}."
    if isinstance(exc, FileNotFoundError):
        return f"No such file or folder{target}."
    if isinstance(exc, IsADirectoryError):
        return f"Expected a file but found a folder{target}."
    if isinstance(exc, NotADirectoryError):
        return f"A part of the path is not a folder{target}."
    reason = exc.strerror or str(exc) or type(exc).__name__
    return f"{reason}{target}."


async def read_current(path: Path, editor: EditorFiles | None) -> str | None:
    """The text a tool should change: the editor's buffer when it offers reads (unsaved
    changes included), else the disk's; None when the file does not exist."""
    if editor is not None and editor.can_read and path.is_file():
        return await editor.read_text(path)
    return await asyncio.to_thread(read_existing, path)


async def write_text(path: Path, text: str, editor: EditorFiles | None) -> int:
    """Write through the editor when it offers writes, else atomically to disk; the
    size in bytes."""
    data = text.encode("utf-8", errors="surrogateescape")
    if editor is not None and editor.can_write:
        await editor.write_text(path, text)
    else:
        await asyncio.to_thread(paths.atomic_write, path, data)
    return len(data)


def read_existing(path: Path) -> str | None:
    """The current text of `path` (None if missing); undecodable bytes are kept as escapes."""
    try:
        return path.read_bytes().decode("utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return None
