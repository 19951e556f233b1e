"""Claude Code's `.mcp.json` of a project, read as agent-tui's `mcp` key (issue 43): its
`mcpServers` — stdio ones (`command`, `args`, `env`) and HTTP ones (`type: "http"`,
`url`, `headers`) — with `${VAR}` and `${VAR:-default}` expanded from the environment as
Claude Code does. It is part of the project's config: it waits for the project's trust
like `agent-tui.json`'s own `mcp`, which wins where both name a server."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from agent_tui.errors import ConfigError

VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class _Missing(Exception):
    pass


def mcp_servers(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """`.mcp.json`'s servers as agent-tui's `mcp` entries. ConfigError names the file and
    the server for a shape agent-tui cannot read."""
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: "mcpServers" must be an object of servers by name.')
    return {name: _server(path, name, entry) for name, entry in servers.items()}


def _server(path: Path, name: str, entry: Any) -> dict[str, Any]:
    where = f'{path}: server "{name}"'
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object.")
    kind = entry.get("type", "stdio")
    try:
        if kind == "stdio":
            command, args = entry.get("command"), entry.get("args", [])
            if not isinstance(command, str) or not command or not _strings(args):
                raise ConfigError(f'{where}: "command" (a string) and "args" (strings) expected.')
            env = entry.get("env", {})
            if not isinstance(env, dict) or not _strings(list(env.values())):
                raise ConfigError(f'{where}: "env" must map names to strings.')
            return {
                "type": "local",
                "command": [_expand(command), *(_expand(a) for a in args)],
                "environment": {k: _expand(v) for k, v in env.items()},
            }
        if kind in ("http", "sse"):
            url, headers = entry.get("url"), entry.get("headers", {})
            if not isinstance(url, str) or not isinstance(headers, dict):
                raise ConfigError(f'{where}: "url" (a string) and "headers" (an object) expected.')
            remote = {"type": "remote", "url": _expand(url)}
            remote["headers"] = {k: _expand(str(v)) for k, v in headers.items()}
            return {**remote, "enabled": kind == "http"}  # SSE: listed, not connected
    except _Missing:
        return {"type": "local", "command": ["(unset variable)"], "enabled": False}
    raise ConfigError(f'{where}: "type" {kind!r} is not one of stdio, http, sse.')


def _strings(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(v, str) for v in values)


def _expand(text: str) -> str:
    def value(match: re.Match[str]) -> str:
        found = os.environ.get(match.group(1), match.group(2))
        if found is None:  # set nowhere and no default: the server is left off
            raise _Missing
        return found

    return VARIABLE.sub(value, text)
