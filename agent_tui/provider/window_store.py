"""Context windows learned from overflow errors, remembered per model and server.

A local server that answers none of the questions of `provider/windows.py` still names
its window when a request does not fit ("Requested tokens (7233) exceed context window of
4096"). That number is kept in `<data dir>/windows.json`, keyed by model id and server
address, so the next run (another process, another engine) knows the window from the
start: context % and automatic compaction work, and the overflow is not hit again.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from agent_tui import paths
from agent_tui.ids import now_ms

STORE_NAME = "windows.json"


class LearnedWindow(BaseModel):
    context: int = Field(ge=1)
    """The window in tokens, as the server's error named it."""
    learned: int = Field(default_factory=now_ms)
    """When (ms since the epoch)."""
    detail: str = ""
    """The error text it was read from (shortened)."""


class WindowFile(BaseModel):
    version: int = 1
    windows: dict[str, LearnedWindow] = Field(default_factory=dict)
    """`<model id>@<api base>` -> the learned window."""


def store_path() -> Path:
    return paths.data_dir() / STORE_NAME


def window_key(model: str, api_base: str | None) -> str:
    return f"{model}@{(api_base or '').rstrip('/')}"


def read_store(path: Path | None = None) -> WindowFile:
    """The learned windows; an unreadable or invalid file counts as empty (it is only a
    cache of what servers said, rewritten at the next overflow)."""
    path = path or store_path()
    try:
        return WindowFile.model_validate_json(path.read_bytes())
    except (OSError, ValidationError, ValueError):
        return WindowFile()


def write_learned(key: str, window: LearnedWindow) -> None:
    """Add or replace one entry, atomically (a temporary file renamed over the old one),
    so two processes never leave a half-written file."""
    path = store_path()
    data = read_store(path)
    data.windows[key] = window
    paths.atomic_write(path, json.dumps(data.model_dump(), indent=2, sort_keys=True).encode())
