"""Where agent-tui keeps its config and data."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "agent-tui"


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
