"""Which files make up the config, read as plain JSON (comments stripped, merged). A leaf
without pydantic: `config.py` validates what this reads, and `run` peeks at `run.attach`
here before deciding whether it needs the engine at all."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.errors import ConfigError

CONFIG_FILE_NAME = "agent-tui.json"
ATTACH_VALUES = "off, auto, or the server's URL (http://HOST:PORT)"


def check_attach(value: object, where: str = "run.attach") -> str:
    """A valid `run.attach` value, else a ConfigError saying what is valid."""
    if isinstance(value, str) and (
        value in ("off", "auto") or value.startswith(("http://", "https://", "ws://", "wss://"))
    ):
        return value
    raise ConfigError(f"{where} is {value!r}; valid: {ATTACH_VALUES}.")


def strip_comments(value: Any) -> Any:
    """Keys starting with `_` or `$` are documentation (see config.example.json)."""
    if isinstance(value, dict):
        return {
            k: strip_comments(v)
            for k, v in value.items()
            if not (isinstance(k, str) and k[:1] in "_$")
        }
    if isinstance(value, list):
        return [strip_comments(v) for v in value]
    return value


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def read_json(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"Cannot read config file {path}: {exc.strerror or exc}.") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"Config file {path} is not UTF-8 text.") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"Config file {path} is not valid JSON: {exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}."
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"Config file {path} must hold a JSON object ({{...}}).")
    return strip_comments(data)


def config_files() -> list[Path]:
    """The files that make up the config, lowest priority first."""
    explicit = os.environ.get("AGENT_TUI_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(
                f"AGENT_TUI_CONFIG points to {path}, which does not exist. "
                "Create it or unset AGENT_TUI_CONFIG."
            )
        return [path]
    candidates = [paths.config_dir() / "config.json", Path.cwd() / CONFIG_FILE_NAME]
    return [p for p in candidates if p.is_file()]


def is_project_file(path: Path) -> bool:
    """The project's own config (the working directory's), not the person's own files."""
    return not os.environ.get("AGENT_TUI_CONFIG") and path == Path.cwd() / CONFIG_FILE_NAME


def raw_value(*keys: str) -> Any:
    """One value of the merged files, unvalidated (None when no file sets it)."""
    merged: dict[str, Any] = {}
    for path in config_files():
        merged = deep_merge(merged, read_json(path))
    value: Any = merged
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value
