"""Which files make up the config, read as plain JSON (comments stripped, merged). A leaf
without pydantic: `config/` validates what this reads, and `run` peeks at `run.attach`
here before deciding whether it needs the engine at all."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.config.claude_mcp import mcp_servers
from agent_tui.config.claude_permissions import permission_of
from agent_tui.config.claude_settings import add_hooks, contribution, hooks_of, project_files
from agent_tui.errors import ConfigError
from agent_tui.trust import keys, store, vouched

CONFIG_FILE_NAME = vouched.CONFIG_FILE_NAME
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


def merge_layers(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """`over`'s config on `base`'s (deep_merge), its `permission` by merge_permissions."""
    merged = deep_merge(base, {k: v for k, v in over.items() if k != "permission"})
    if isinstance(over.get("permission"), dict):
        below = base.get("permission") if isinstance(base.get("permission"), dict) else {}
        merged["permission"] = merge_permissions(below, over["permission"])
    return merged


def merge_permissions(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Tool by tool, `over`'s level or patterns on `base`'s: a level becomes the `*` of
    patterns laid over it, and a pattern a lower file denies stays denied (deny wins
    across files, as in Claude Code)."""
    merged = dict(base)
    for tool, rule in over.items():
        old = merged.get(tool)
        if old is None:
            merged[tool] = rule
            continue
        below = old if isinstance(old, dict) else {"*": old}
        table = {**below, **rule} if isinstance(rule, dict) else {"*": rule}
        table.update({p: level for p, level in below.items() if level == "deny" and p != "*"})
        merged[tool] = table["*"] if list(table) == ["*"] else table
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


def person_files() -> list[Path]:
    """The person's own config files (never in question), lowest priority first:
    `AGENT_TUI_CONFIG` alone when set, else `<config dir>/config.json`."""
    explicit = os.environ.get("AGENT_TUI_CONFIG")
    if explicit:
        path = Path(explicit)
        if not path.is_file():
            raise ConfigError(
                f"AGENT_TUI_CONFIG points to {path}, which does not exist. "
                "Create it or unset AGENT_TUI_CONFIG."
            )
        return [path]
    own = paths.config_dir() / "config.json"
    return [own] if own.is_file() else []


def project_file(directory: Path) -> Path | None:
    """The project's own config (written by whoever wrote the repository); not read when
    `AGENT_TUI_CONFIG` names the one file to use."""
    if os.environ.get("AGENT_TUI_CONFIG"):
        return None
    path = directory / CONFIG_FILE_NAME
    return path if path.is_file() else None


def config_files(directory: Path | None = None) -> list[Path]:
    """Every file that makes up the config, lowest priority first."""
    found = person_files()
    project = project_file(directory or Path.cwd())
    return [*found, project] if project is not None else found


PERSON_ONLY = ("trusted_projects", "trust_project_hooks")
"""Keys a project's file never sets, trusted or not: a project cannot vouch for itself."""


@dataclass
class ProjectLayer:
    """A project's own config, split by trust."""

    directory: Path
    path: Path | None
    data: dict[str, Any]
    """Everything the project's file says."""
    split: keys.Split
    state: store.TrustState
    run_files: list[Path]
    """Files inside the project its commands would run (read-only in the sandbox)."""
    claude_mcp: list[str]
    """The servers Claude Code's `.mcp.json` brought (config/claude_mcp.py)."""
    hook_files: list[tuple[Path, dict[str, Any]]]
    """Each project file's own hooks (agent-tui.json's, then Claude Code's settings')."""
    claude_read: dict[str, str]
    """Claude Code's settings files read -> what each brought (config/claude_settings.py)."""

    @property
    def applied(self) -> dict[str, Any]:
        """What of it is in force: all of it once trusted, else the safe part; never what
        only the person's own config may say."""
        data = self.data if self.state.trusted else self.split.safe
        return {k: v for k, v in data.items() if k not in PERSON_ONLY}


def project_layer(directory: Path, person: dict[str, Any], trust_now: bool = False) -> ProjectLayer:
    """The project's config with its trust state; `trust_now` records the trust first."""
    path = project_file(directory)
    data = read_json(path) if path is not None else {}
    hook_files = [(path, data["hooks"])] if path is not None and data.get("hooks") else []
    claude_read: dict[str, str] = {}
    claude_rules: dict[str, Any] = {}
    for settings in [] if os.environ.get("AGENT_TUI_CONFIG") else project_files(directory):
        raw = read_json(settings)
        hooks = hooks_of(settings, raw)
        rules, skipped = permission_of(settings, raw, directory)
        claude_read[str(settings)] = contribution(hooks, rules, skipped)
        hook_files += [(settings, hooks)] if hooks else []
        data = add_hooks(data, hooks)
        claude_rules = merge_permissions(claude_rules, rules)
        path = path or settings
    if claude_rules:  # below agent-tui.json's own
        data = merge_layers({"permission": claude_rules}, data)
    claude = directory / vouched.CLAUDE_MCP
    servers: dict[str, Any] = {}
    if claude.is_file() and not os.environ.get("AGENT_TUI_CONFIG"):
        servers = mcp_servers(claude, read_json(claude))  # agent-tui.json's own win
        data = deep_merge({"mcp": servers}, data) if servers else data
        path = path or claude
    runs = vouched.run_files(directory, data)
    files = vouched.digests(directory.resolve(), vouched.vouched_files(directory, runs))
    if path is None and os.environ.get("AGENT_TUI_CONFIG"):
        files = {}  # AGENT_TUI_CONFIG: the project's files are not read at all
    trusted_paths = person.get("trusted_projects")
    trusted_paths = trusted_paths if isinstance(trusted_paths, list) else []
    if trust_now and files:
        store.trust(directory, files)
    state = store.state(directory, files, [str(p) for p in trusted_paths])
    return ProjectLayer(
        directory=directory,
        path=path,
        data=data,
        split=keys.split(data, directory),
        state=state,
        run_files=runs,
        claude_mcp=sorted(servers),
        hook_files=hook_files,
        claude_read=claude_read,
    )


def person_data() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in person_files():
        merged = deep_merge(merged, read_json(path))
    return merged


def raw_value(*names: str, directory: Path | None = None) -> Any:
    """One value of the config in force, unvalidated (None when no file sets it): the
    project's part only as far as its trust allows. The trust (hashing what it vouches
    for) is looked up only when the project sets this value and it waits for trust:
    commands ask for `run.attach` and `engine.idle` before anything else."""
    directory = directory or Path.cwd()
    person = person_data()
    path = project_file(directory)
    data = read_json(path) if path is not None else {}
    safe = {k: v for k, v in keys.split(data, directory).safe.items() if k not in PERSON_ONLY}
    if _lookup(data, names) != _lookup(safe, names):  # the project's value waits for trust
        safe = project_layer(directory, person).applied
    return _lookup(deep_merge(person, safe), names)


def _lookup(value: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value
