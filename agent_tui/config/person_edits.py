"""Changes agent-tui writes into the person's own config file when the person asks for
them (never into a project's): a program of a project let out of the sandbox for good."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.config.layers import read_json
from agent_tui.errors import ConfigError


def own_config_path() -> Path:
    """The file the person's own settings are saved in (`AGENT_TUI_CONFIG`, else
    `<config dir>/config.json`, made when missing)."""
    explicit = os.environ.get("AGENT_TUI_CONFIG")
    return Path(explicit) if explicit else paths.config_dir() / "config.json"


def save_outside(directory: Path, name: str) -> Path:
    """Add `name` to `sandbox.outside` for the project `directory` in the person's own
    config; the file it was saved in. Other keys and their order are kept."""
    path = own_config_path()
    data: dict[str, Any] = {}
    if path.is_file():
        read_json(path)  # a broken file is reported (ConfigError), never overwritten
        data = json.loads(path.read_text("utf-8"))  # as written: its `_` notes kept
    sandbox = data.setdefault("sandbox", {})
    if not isinstance(sandbox, dict):
        raise ConfigError(f"{path}: sandbox must be an object to save sandbox.outside in it.")
    outside = sandbox.setdefault("outside", {})
    if not isinstance(outside, dict):
        raise ConfigError(f"{path}: sandbox.outside must map project folders to lists.")
    names = outside.setdefault(str(directory), [])
    if name not in names:
        names.append(name)
    paths.atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    return path
