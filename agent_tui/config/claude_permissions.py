"""Claude Code's `permissions` (`allow`, `ask`, `deny` lists of rules such as `Bash`,
`Bash(npm run test:*)`, `Read(./.env)`, `Edit(src/**)`, `WebFetch(domain:example.com)`,
`mcp__github__create_issue`) read into agent-tui's `permission` shape: per tool, a level
per pattern (tool/permission_rules.py), `*` for a rule naming the whole tool. A rule for
a tool agent-tui does not have is listed as not read."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agent_tui.errors import ConfigError

LEVELS = ("allow", "ask", "deny")
STRICTNESS = {"allow": 0, "ask": 1, "deny": 2}
TOOLS = {
    "Bash": ("bash",),
    "Read": ("read", "grep", "glob", "list"),
    "Edit": ("edit", "write"),
    "MultiEdit": ("edit",),
    "Write": ("write",),
    "Grep": ("grep",),
    "Glob": ("glob",),
    "LS": ("list",),
    "WebFetch": ("webfetch",),
    "TodoWrite": ("todowrite",),
    "Task": ("task",),
    "TaskOutput": ("task_output",),
    "BashOutput": ("task_output",),
    "TaskStop": ("task_stop",),
    "KillShell": ("task_stop",),
    "EnterWorktree": ("enter_worktree",),
}
"""Claude Code's tools -> agent-tui's: as in Claude Code, a `Read` rule covers the tools
that read files and an `Edit` rule those that change them."""
RULE = re.compile(r"^([A-Za-z][\w-]*)(?:\((.*)\))?$", re.S)


def permission_of(path: Path, data: dict[str, Any], root: Path) -> tuple[dict[str, Any], list[str]]:
    """(agent-tui's `permission` from the file's `permissions`, the rules not read).
    `root`: what a rule's `/path` is relative to (the project; Claude Code's folder for
    the person's own settings)."""
    section = data.get("permissions") or {}
    if not isinstance(section, dict):
        raise ConfigError(f'{path}: "permissions" must be an object with allow / ask / deny lists.')
    found: dict[str, dict[str, str]] = {}
    skipped: list[str] = []
    for level in LEVELS:
        rules = section.get(level) or []
        if not isinstance(rules, list) or not all(isinstance(r, str) for r in rules):
            raise ConfigError(f'{path}: "permissions.{level}" must be a list of rules (strings).')
        for rule in rules:
            if not _add(found, rule.strip(), level, root):
                skipped.append(rule)
    return found, skipped


def rules_of(rules: Iterable[str], root: Path) -> dict[str, Any]:
    """Rules given as a list (a command's `allowed-tools`) as `permission` entries; those
    naming a tool agent-tui does not have are left out."""
    found: dict[str, dict[str, str]] = {}
    for rule in rules:
        _add(found, rule.strip(), "allow", root)
    return dict(found)


def _add(found: dict[str, dict[str, str]], rule: str, level: str, root: Path) -> bool:
    if (match := RULE.match(rule)) is None:
        return False
    name, spec = match.group(1), match.group(2)
    if not (tools := our_tools(name)):
        return False
    for tool in tools:
        pattern = "*" if spec in (None, "", "*") else _pattern(tool, spec.strip(), root)
        table = found.setdefault(tool, {})
        old = table.get(pattern)
        if old is None or STRICTNESS[level] > STRICTNESS[old]:
            table[pattern] = level
    return True


def our_tools(name: str) -> tuple[str, ...]:
    """agent-tui's tools for a Claude Code tool name: its counterparts (TOOLS), or for
    `mcp__server__tool` agent-tui's `server_tool` and for `mcp__server` all its tools."""
    if name in TOOLS:
        return TOOLS[name]
    parts = name.split("__")
    if parts[0] != "mcp" or len(parts) not in (2, 3) or not all(parts[1:]):
        return ()
    return (f"{parts[1]}_{parts[2]}",) if len(parts) == 3 else (f"{parts[1]}_*",)


def claude_rules(tool: str, claude_tool: str, patterns: list[str]) -> list[dict[str, str]]:
    """agent-tui's rule patterns for `tool` as Claude Code's rules (`{toolName,
    ruleContent}`): a bash command and its arguments (`git status`, `git status *`) are
    the prefix rule `git status:*`; a domain stays `domain:…`; no patterns: the whole
    tool."""
    if not patterns:
        return [{"toolName": claude_tool}]
    if tool == "bash":
        contents = [f"{p}:*" for p in dict.fromkeys(p.removesuffix(" *") for p in patterns)]
    else:
        contents = list(patterns)
    return [{"toolName": claude_tool, "ruleContent": content} for content in contents]


def _pattern(tool: str, spec: str, root: Path) -> str:
    if tool == "bash":
        return spec[:-2] + "*" if spec.endswith(":*") else spec  # `npm run test:*`: a prefix
    if spec.startswith("domain:"):
        return spec
    if spec.startswith("//"):
        return spec[1:]  # an absolute path
    if spec.startswith("/"):
        return str(root / spec[1:])  # relative to the settings' root
    return spec.removeprefix("./")
