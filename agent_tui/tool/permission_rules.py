"""Permission rules that name commands, paths and domains, beside a level per tool: the
config's `permission` takes `{"bash": {"git status*": "allow", "*": "ask"}}` (OpenCode's
shape) and `{"read": {".env": "deny"}}`, and Claude Code's `permissions.allow / ask /
deny` lists (`Bash(npm run test:*)`, `Read(./.env)`, `Edit(src/**)`,
`WebFetch(domain:example.com)`) are read into that shape (config/claude_permissions.py).

Among the patterns that match a call, the strictest wins (deny over ask over allow,
whatever their order or length); `*` is the level of a call no pattern names. A bash
command line must pass command by command (tool/bash_policy.py)."""

from __future__ import annotations

import re
from fnmatch import fnmatchcase
from itertools import takewhile
from pathlib import Path
from urllib.parse import urlparse

from pydantic import BaseModel

from agent_tui.config.settings import PermissionLevel
from agent_tui.tool.bash_policy import STRICTNESS, command_level, split_commands

Rules = dict[str, PermissionLevel]
PATH_FIELDS = ("file_path", "path")
DOMAIN = "domain:"
ALWAYS_WORDS = 3
"""Words of a command an "always" answer allows with any arguments after them, at most."""
WORD = re.compile(r"^[A-Za-z0-9][A-Za-z0-9:_+.-]*$")
"""A program or subcommand word (not an option, a path, a quoted or shell word)."""


def _worst(levels: list[PermissionLevel]) -> PermissionLevel | None:
    return max(levels, key=STRICTNESS.__getitem__) if levels else None


def strictest(rules: Rules, subject: str) -> PermissionLevel | None:
    """The strictest level among the patterns (but `*`) that match `subject`."""
    return _worst([lvl for pat, lvl in rules.items() if pat != "*" and fnmatchcase(subject, pat)])


def level_for(
    rules: Rules, tool: str, params: BaseModel, directory: Path, default: PermissionLevel
) -> tuple[PermissionLevel, str]:
    """(level, what it was decided on) of one call under a tool's rules."""
    fallback = rules.get("*", default)
    command = getattr(params, "command", None)
    if tool == "bash" and isinstance(command, str):
        level, reason = command_level(rules, command, fallback, match=strictest)
        return level, f"this bash command ({reason})" if reason else "this bash command"
    url = getattr(params, "url", None)
    if isinstance(url, str):
        return _domain_level(rules, url) or fallback, f"the {tool} tool on {url}"
    for name in PATH_FIELDS:
        if name not in type(params).model_fields:
            continue
        value = getattr(params, name) or "."  # no path: the project folder
        found = _path_level(rules, _resolved(directory, value), directory)
        return found or fallback, f"the {tool} tool on {value}"
    return fallback, f"the {tool} tool"


def _resolved(directory: Path, value: str) -> Path:
    path = directory / Path(value).expanduser()  # an absolute `value` stays itself
    try:
        return path.resolve()  # `src/../.env` and a link to .env are .env
    except OSError:
        return path


def _path_level(rules: Rules, path: Path, directory: Path) -> PermissionLevel | None:
    root = directory.resolve()
    relative = str(path.relative_to(root)) if path.is_relative_to(root) else None
    return _worst(
        [
            level
            for pattern, level in rules.items()
            if pattern != "*"
            and not pattern.startswith(DOMAIN)
            and _path_matches(pattern, path, relative)
        ]
    )


def _path_matches(pattern: str, path: Path, relative: str | None) -> bool:
    pattern = pattern.removeprefix("./")
    if pattern.startswith(("/", "~")):
        target = str(Path(pattern).expanduser())
        return fnmatchcase(str(path), target) or fnmatchcase(str(path), target.rstrip("/") + "/**")
    if relative is None:
        return False
    if fnmatchcase(relative, pattern) or fnmatchcase(relative, pattern.rstrip("/") + "/**"):
        return True
    # A pattern without a folder names a file or folder at any depth (gitignore's way).
    return "/" not in pattern and any(fnmatchcase(part, pattern) for part in Path(relative).parts)


def _domain_level(rules: Rules, url: str) -> PermissionLevel | None:
    host = (urlparse(url).hostname or "").lower()
    levels = [
        level
        for pattern, level in rules.items()
        if (pattern.startswith(DOMAIN) and fnmatchcase(host, pattern[len(DOMAIN) :].lower()))
        or (not pattern.startswith(DOMAIN) and pattern != "*" and fnmatchcase(url, pattern))
    ]
    return _worst(levels)


def always_rules(tool: str, params: BaseModel) -> list[str]:
    """The patterns an "always" answer allows for the rest of the session: each command of
    a bash line by its first words (up to an option or a path: `git status`, `git status *`),
    a fetch by its domain; none: the whole tool (a line that cannot be checked command
    by command, and every other tool)."""
    command = getattr(params, "command", None)
    if tool == "bash" and isinstance(command, str):
        commands, problem = split_commands(command)
        prefixes = [_prefix(simple) for simple in commands]
        if problem is not None or not prefixes or not all(prefixes):
            return []
        return [rule for prefix in dict.fromkeys(prefixes) for rule in (prefix, f"{prefix} *")]
    url = getattr(params, "url", None)
    host = urlparse(url).hostname if isinstance(url, str) else None
    return [f"{DOMAIN}{host}"] if host else []


def _prefix(simple: str) -> str:
    return " ".join(takewhile(WORD.match, simple.split()[:ALWAYS_WORDS]))
