"""What of the person's environment a project's MCP servers would be given: `${VAR}` and
`${VAR:-default}` (Claude Code's `.mcp.json`) and `{env:VAR}` (agent-tui's own) in a
server's command, environment, url and headers. The trust question lists each one with
where it goes; once trusted, a variable withheld from commands (a secret) is given only
if the recorded trust named it (docs/security.md#repository-trust).

Listing and expanding read the same fields with the same pattern, so nothing is expanded
that the question could not have shown."""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from agent_tui.errors import ConfigError

REFERENCE = re.compile(
    r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}"
    r"|\{env:(?P<own>[A-Za-z_][A-Za-z0-9_]*)\}"
)


@dataclass(frozen=True)
class Sent:
    """One variable a project's server would receive, and where it goes."""

    server: str
    variable: str
    field: str
    """`header NAME`, `url`, `env NAME`, `command` or `args`."""
    to: str
    """The server's URL or command line, as written."""
    remote: bool

    def line(self) -> str:
        if self.remote:
            return f"mcp server {self.server}: sends ${self.variable} to {self.to} ({self.field})"
        return f"mcp server {self.server}: gives ${self.variable} to `{self.to}` ({self.field})"


def names(text: str) -> list[str]:
    """The variables a value refers to, in order."""
    return [match["name"] or match["own"] for match in REFERENCE.finditer(text)]


def unset(text: str) -> list[str]:
    """`${VAR}` references set nowhere and without a default (Claude Code leaves such a
    server off)."""
    return [
        match["name"]
        for match in REFERENCE.finditer(text)
        if match["name"] and match["default"] is None and match["name"] not in os.environ
    ]


def _values(entry: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(field, value) for every value of a server entry that is expanded."""
    command = entry.get("command")
    if isinstance(command, list):
        for index, word in enumerate(command):
            yield ("command" if index == 0 else "args"), str(word)
    for key, field in (("environment", "env"), ("headers", "header")):
        values = entry.get(key)
        if isinstance(values, dict):
            yield from ((f"{field} {name}", str(value)) for name, value in values.items())
    if isinstance(entry.get("url"), str):
        yield "url", entry["url"]


def sent(servers: dict[str, Any]) -> list[Sent]:
    """Every variable each server (agent-tui's `mcp` shape, values as written) refers to."""
    found: list[Sent] = []
    for server, entry in sorted(servers.items()):
        if not isinstance(entry, dict):
            continue
        remote = isinstance(entry.get("url"), str)
        command = entry.get("command")
        words = [str(word) for word in command] if isinstance(command, list) else []
        to = entry["url"] if remote else shlex.join(words)
        for field, value in _values(entry):
            found += [Sent(server, name, field, to, remote) for name in names(value)]
    return found


def named(found: list[Sent]) -> dict[str, list[str]]:
    """Server -> the question's lines about it: what a trust records as named. A line
    holds the variable and where it goes, so the same variable sent elsewhere is new."""
    lines: dict[str, set[str]] = {}
    for item in found:
        lines.setdefault(item.server, set()).add(item.line())
    return {server: sorted(shown) for server, shown in sorted(lines.items())}


def expand(
    text: str, where: str, *, allowed: Callable[[str], bool], refused: Callable[[str], None]
) -> str:
    """`text` with its references replaced, in one pass (a value or default that looks
    like a reference stays as it is). A variable not `allowed` becomes "" and is passed to
    `refused`; `{env:NAME}` unset is a ConfigError naming `where`, as agent-tui's own
    config has it; `${VAR}` unset is its default, else ""."""

    def value(match: re.Match[str]) -> str:
        name = match["name"] or match["own"]
        if not allowed(name):
            refused(name)
            return ""
        found = os.environ.get(name)
        if match["own"] and not found:
            raise ConfigError(f"Config field {where} uses {{env:{name}}}, but {name} is not set.")
        if found is None:
            return match["default"] or ""
        return found

    return REFERENCE.sub(value, text)


def resolved(text: str) -> str:
    """`text` with each reference's value, nothing refused or raised: only to find the
    files a command names (trust/trusted_files.py), never sent anywhere."""

    def value(match: re.Match[str]) -> str:
        return os.environ.get(match["name"] or match["own"], match["default"] or "")

    return REFERENCE.sub(value, text)
