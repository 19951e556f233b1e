"""Where agent-tui keeps its config and data, and how a file is written whole."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import platformdirs

APP_NAME = "agent-tui"

# os.umask can only be read by setting it; do that once, at import, not in threads.
_UMASK = os.umask(0o022)
os.umask(_UMASK)


def config_dir() -> Path:
    """The user config dir; `$AGENT_TUI_CONFIG_DIR` overrides it (used by tests)."""
    env = os.environ.get("AGENT_TUI_CONFIG_DIR")
    return Path(env) if env else Path(platformdirs.user_config_dir(APP_NAME))


def data_dir() -> Path:
    """Database and saved tool outputs: `$AGENT_TUI_DATA_DIR` or the user data dir."""
    env = os.environ.get("AGENT_TUI_DATA_DIR")
    return Path(env) if env else Path(platformdirs.user_data_dir(APP_NAME))


def claude_home() -> Path:
    """Claude Code's own folder (its settings, skills, commands, agents, CLAUDE.md):
    `$CLAUDE_CONFIG_DIR`, as Claude Code reads it, else ~/.claude."""
    env = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(env).expanduser() if env else Path.home() / ".claude"


def database_path() -> Path:
    return data_dir() / "agent-tui.db"


def tool_output_dir() -> Path:
    return data_dir() / "tool-output"


def prompts_dir() -> Path:
    """Prompt texts: bundled in the wheel as agent_tui/prompts, at the repo root otherwise."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "prompts", here.parent / "prompts"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("prompts/ folder not found next to the agent_tui package")


def read_prompt(name: str) -> str:
    return (prompts_dir() / name).read_text(encoding="utf-8")


def is_within(path: Path, root: Path) -> bool:
    """Whether `path`, symlinks followed, is inside `root` (not `root` itself)."""
    try:
        return root.resolve() in path.resolve().parents
    except (OSError, RuntimeError):  # RuntimeError: a link loop (an older Python's resolve)
        return False


def atomic_write(path: Path, data: bytes) -> None:
    """Write to a temp file beside `path`, then rename over it: readers never see half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode: int | None = None
    with contextlib.suppress(FileNotFoundError):
        mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600; new files get the usual umask-based mode instead.
        os.chmod(tmp, 0o666 & ~_UMASK if mode is None else mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
