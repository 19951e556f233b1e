"""Claude Code's settings files, read as they are (issue 43): `~/.claude/settings.json`
(the person's own, beside agent-tui's config), `.claude/settings.json` and
`.claude/settings.local.json` (the project's: they wait for its trust like
`agent-tui.json`). Their `hooks` add up with agent-tui's own, each file a source of its
own, as Claude Code adds up the hooks of its settings levels; their `permissions` become
`permission` rules (config/claude_permissions.py) below agent-tui's own file of the same
level. Their other keys (`model`, `env`, `statusLine`, ...) are not read."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.errors import ConfigError
from agent_tui.trust.trusted_files import CLAUDE_SETTINGS

USER_SETTINGS = "settings.json"
"""In Claude Code's own folder (paths.claude_home)."""


def user_file() -> Path | None:
    path = paths.claude_home() / USER_SETTINGS
    return path if path.is_file() else None


def project_files(directory: Path) -> list[Path]:
    """The project's settings files, lowest priority first (as Claude Code orders them);
    a folder or a link loop in a file's place too, for its reader to name."""
    return [directory / name for name in CLAUDE_SETTINGS if os.path.lexists(directory / name)]


def hooks_of(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    hooks = data.get("hooks") or {}
    if not isinstance(hooks, dict):
        raise ConfigError(f'{path}: "hooks" must be an object of events (Claude Code\'s shape).')
    return hooks


def add_hooks(data: dict[str, Any], hooks: dict[str, Any]) -> dict[str, Any]:
    """`data` with `hooks`' matchers after its own, event by event (they add up)."""
    found = data.get("hooks")  # of any shape when unvalidated (layers.raw_value)
    merged = dict(found) if isinstance(found, dict) else {}
    for event, matchers in hooks.items():
        merged[event] = [*_list(merged.get(event)), *_list(matchers)]
    return {**data, "hooks": merged} if merged else data


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def contribution(hooks: dict[str, Any], rules: dict[str, Any], skipped: list[str]) -> str:
    """What a settings file brings, for `/context`: its hooks' events, its rules."""
    parts = [f"hooks ({', '.join(hooks)})"] if hooks else []
    if count := sum(len(table) for table in rules.values()):
        parts.append(f"permission rules for {', '.join(sorted(rules))} ({count})")
    if skipped:
        parts.append(f"rules for tools agent-tui does not have, not read: {', '.join(skipped)}")
    return "; ".join(parts) or "nothing agent-tui reads"
