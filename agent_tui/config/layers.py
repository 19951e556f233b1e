"""Which files make up the config, read as plain JSON (comments stripped, merged). A leaf
without pydantic: `config/` validates what this reads, and `run` peeks at `run.attach`
here before deciding whether it needs the engine at all."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from agent_tui import paths
from agent_tui.config.claude_mcp import mcp_servers
from agent_tui.config.claude_permissions import permission_of
from agent_tui.config.claude_settings import add_hooks, contribution, hooks_of, project_files
from agent_tui.errors import ConfigError
from agent_tui.trust import keys, memory_imports, store, trusted_files, variables

CONFIG_FILE_NAME = trusted_files.CONFIG_FILE_NAME
ATTACH_VALUES = "off, auto, or the server's URL (http://HOST:PORT)"
MAX_DEPTH = 100
"""Arrays and objects nested in one another at most in a config file: real ones nest a
few levels, and what reads them after `json` walks them recursively."""


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
        if (old := merged.get(tool)) is None:
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
    too_deep = ConfigError(
        f"Config file {path} is nested too deeply (more than {MAX_DEPTH} levels of arrays "
        "and objects)."
    )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"Config file {path} is not valid JSON: {exc.msg} at line {exc.lineno}, "
            f"column {exc.colno}."
        ) from exc
    except RecursionError:  # json's own limit, before ours
        raise too_deep from None
    if not isinstance(data, dict):
        raise ConfigError(f"Config file {path} must hold a JSON object ({{...}}).")
    if _depth_over(data, MAX_DEPTH):
        raise too_deep
    return strip_comments(data)


def _depth_over(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest more than `limit` deep in `value` (level by level:
    no recursion)."""
    level = [value]
    for _ in range(limit):
        level = [
            inner
            for outer in level
            for inner in (outer.values() if isinstance(outer, dict) else outer)
            if isinstance(inner, (dict, list))
        ]
        if not level:
            return False
    return True


def person_files() -> list[Path]:
    """The person's own config files (never in question), lowest priority first:
    `AGENT_TUI_CONFIG` alone when set, else `<config dir>/config.json`."""
    if explicit := os.environ.get("AGENT_TUI_CONFIG"):
        path = Path(explicit)
        if not os.path.lexists(path):  # a folder or a link loop: read_json says so
            raise ConfigError(
                f"AGENT_TUI_CONFIG points to {path}, which does not exist. "
                "Create it or unset AGENT_TUI_CONFIG."
            )
        return [path]
    own = paths.config_dir() / "config.json"
    return [own] if os.path.lexists(own) else []


def project_file(directory: Path) -> Path | None:
    """The project's own config (written by whoever wrote the repository); not read when
    `AGENT_TUI_CONFIG` names the one file to use."""
    if os.environ.get("AGENT_TUI_CONFIG"):
        return None
    path = directory / CONFIG_FILE_NAME
    return path if os.path.lexists(path) else None  # a folder there is named, not ignored


PERSON_ONLY = ("trusted_projects", "trust_project_hooks", "notify")
"""Keys a project's file never sets, trusted or not: a project cannot vouch for itself."""
PERSON_ONLY_SANDBOX = ("outside",)
"""Keys of `sandbox` a project's file never sets: it cannot take its own programs out."""


def without_person_only(data: dict[str, Any]) -> dict[str, Any]:
    """A project's config less what only the person's own config may say."""
    kept = {k: v for k, v in data.items() if k not in PERSON_ONLY}
    if isinstance(kept.get("sandbox"), dict):
        kept["sandbox"] = {k: v for k, v in kept["sandbox"].items() if k not in PERSON_ONLY_SANDBOX}
    return kept


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
    skipped: list[str] = field(default_factory=list)
    """A line per broken project file left out (skip_line): not JSON, wrong types,
    unreadable, a folder where the file should be. The rest of the project applies."""
    sent: list[variables.Sent] = field(default_factory=list)
    """What of your environment its MCP servers would receive (the trust question's)."""
    imports: list[memory_imports.OutsideImport] = field(default_factory=list)
    """The files outside it its memory files would read (the trust question's)."""

    @property
    def applied(self) -> dict[str, Any]:
        """What of it is in force: all of it once trusted, else the safe part; never what
        only the person's own config may say."""
        return without_person_only(self.data if self.state.trusted else self.split.safe)


Check = Callable[[dict[str, Any], Path], object]
"""Validates one file's part of the config on its own, raising ConfigError (a broken
one is skipped; config/settings.py's model: this leaf has no pydantic)."""
T = TypeVar("T")


def skip_line(error: ConfigError) -> str:
    """A project file's error as the one line saying it was left out."""
    first, *details = str(error).splitlines()
    text = f"{first} {'; '.join(d.strip() for d in details)}" if details else first
    return f"{text.rstrip('.')}; skipped."


def _part(skipped: list[str], read: Callable[..., T], *args: Any) -> T | None:
    """What `read` makes of a project file, or None with its skip_line: a project's
    broken file never stops agent-tui (the person's own does)."""
    try:
        return read(*args)
    except ConfigError as exc:
        skipped.append(skip_line(exc))
        return None


def _checked(data: dict[str, Any], path: Path, check: Check) -> dict[str, Any]:
    check(data, path)
    return data


def _settings_file(
    path: Path, directory: Path, check: Check | None
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """Claude Code's settings file: (its hooks, its permission rules, rules not read)."""
    raw = read_json(path)
    hooks = hooks_of(path, raw)
    rules, not_read = permission_of(path, raw, directory)
    if check is not None:
        check({"hooks": hooks, "permission": rules}, path)
    return hooks, rules, not_read


def _mcp_file(path: Path, check: Check | None) -> dict[str, Any]:
    servers = mcp_servers(path, read_json(path))
    if check is not None:
        check({"mcp": servers}, path)
    return servers


@dataclass
class _Claude:
    """What Claude Code's files of a project bring (those not skipped)."""

    hook_files: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)
    rules: dict[str, Any] = field(default_factory=dict)
    servers: dict[str, Any] = field(default_factory=dict)
    read: dict[str, str] = field(default_factory=dict)
    first: Path | None = None
    """The first of them read."""


def _claude_files(directory: Path, check: Check | None, skipped: list[str]) -> _Claude:
    found = _Claude()
    if os.environ.get("AGENT_TUI_CONFIG"):
        return found
    for settings in project_files(directory):
        if (part := _part(skipped, _settings_file, settings, directory, check)) is None:
            continue
        hooks, rules, not_read = part
        found.read[str(settings)] = contribution(hooks, rules, not_read)
        found.hook_files += [(settings, hooks)] if hooks else []
        found.rules = merge_permissions(found.rules, rules)
        found.first = found.first or settings
    mcp = directory / trusted_files.CLAUDE_MCP
    if os.path.lexists(mcp) and (servers := _part(skipped, _mcp_file, mcp, check)) is not None:
        found.servers = servers
        found.first = found.first or mcp
    return found


def _with_claude(own: dict[str, Any], claude: _Claude) -> dict[str, Any]:
    """agent-tui.json's config with Claude Code's: hooks add up; its own permission
    patterns and `mcp` entries win."""
    data = own
    for _, hooks in claude.hook_files:
        data = add_hooks(data, hooks)
    if claude.rules:  # below agent-tui.json's own
        data = merge_layers({"permission": claude.rules}, data)
    if claude.servers:
        data = deep_merge({"mcp": claude.servers}, data)
    return data


def project_layer(
    directory: Path, person: dict[str, Any], trust_now: bool = False, check: Check | None = None
) -> ProjectLayer:
    """The project's config with its trust state; `trust_now` records the trust first.
    Each file is read (and given to `check`) on its own: a broken one is skipped, a line
    in `skipped`. Of `agent-tui.json`, what applies (by the trust) and its hooks are
    checked: a key waiting for trust is checked once it applies."""
    skipped: list[str] = []
    path = project_file(directory)
    own = _part(skipped, read_json, path) if path is not None else None
    claude = _claude_files(directory, check, skipped)
    data = _with_claude(own or {}, claude)
    runs = trusted_files.run_files(directory, data)
    files = trusted_files.digests(directory.resolve(), trusted_files.vouched_files(directory, runs))
    imports = memory_imports.outside_imports(directory, _deny_read(person))
    if os.environ.get("AGENT_TUI_CONFIG"):
        files, imports = {}, []  # AGENT_TUI_CONFIG: the project's files are not read at all
    trusted_paths = person.get("trusted_projects")
    trusted_paths = trusted_paths if isinstance(trusted_paths, list) else []
    if trust_now and files:
        store.trust(directory, files, variables.named(variables.sent(servers_as_run(person, data))))
    state = store.state(directory, files, [str(p) for p in trusted_paths])
    if own is not None and check is not None:
        applied = dict(own if state.trusted else keys.split(own, directory).safe)
        applied.update({"hooks": own["hooks"]} if "hooks" in own else {})
        if _part(skipped, _checked, applied, path, check) is None:
            own, data = None, _with_claude({}, claude)
    own_hooks = [(path, own["hooks"])] if path is not None and own and own.get("hooks") else []
    return ProjectLayer(
        directory=directory,
        path=path if own is not None else claude.first,
        data=data,
        split=keys.split(data, directory),
        state=state,
        run_files=runs,
        claude_mcp=sorted(claude.servers),
        hook_files=[*own_hooks, *claude.hook_files],
        claude_read=claude.read,
        skipped=skipped,
        sent=variables.sent(servers_as_run(person, data)),
        imports=imports,
    )


def _deny_read(person: dict[str, Any]) -> tuple[Path, ...]:
    """The person's `sandbox.deny_read` (unchecked yet: anything else is none)."""
    entries = _lookup(person, ("sandbox", "deny_read"))
    if not isinstance(entries, list):
        return ()
    return memory_imports.denied(str(entry) for entry in entries)


def servers_as_run(person: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """The project's MCP servers as they would run: each over your own entry of the same
    name (your headers would go to its URL)."""
    own = person.get("mcp") if isinstance(person.get("mcp"), dict) else {}
    servers = data.get("mcp") if isinstance(data.get("mcp"), dict) else {}
    return {
        name: deep_merge(own[name], entry)
        if isinstance(own.get(name), dict) and isinstance(entry, dict)
        else entry
        for name, entry in servers.items()
    }


def person_data() -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for path in person_files():
        merged = deep_merge(merged, read_json(path))
    return merged


def raw_value(*names: str, directory: Path | None = None) -> Any:
    """One value of the config in force, unvalidated (None when no file sets it): the
    project's part only as far as its trust allows. The trust (hashing what it vouches
    for) is looked up only when the project sets this value and it waits for trust:
    commands ask for `run.attach` and `relay.idle` before anything else."""
    directory = directory or Path.cwd()
    person = person_data()
    path = project_file(directory)
    data = (_part([], read_json, path) or {}) if path is not None else {}  # broken: skipped
    safe = without_person_only(keys.split(data, directory).safe)
    if _lookup(data, names) != _lookup(safe, names):  # the project's value waits for trust
        safe = project_layer(directory, person).applied
    return _lookup(deep_merge(person, safe), names)


def _lookup(value: Any, names: tuple[str, ...]) -> Any:
    for name in names:
        if not isinstance(value, dict):
            return None
        value = value.get(name)
    return value
