"""Claude Code's `.mcp.json` of a project, read as agent-tui's `mcp` key (issue 43): its
`mcpServers` — stdio ones (`command`, `args`, `env`) and HTTP ones (`type: "http"`,
`url`, `headers`) — with `${VAR}` and `${VAR:-default}` kept as written: they are
expanded as the server starts, a secret only if the trust question named it
(trust/variables.py). It is part of the project's config: it waits for the project's trust
like `agent-tui.json`'s own `mcp`, which wins where both name a server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_tui.errors import ConfigError
from agent_tui.trust import variables


class _Missing(Exception):
    pass


def mcp_servers(path: Path, data: dict[str, Any]) -> dict[str, Any]:
    """`.mcp.json`'s servers as agent-tui's `mcp` entries. ConfigError names the file and
    the server for a shape agent-tui cannot read."""
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f'{path}: "mcpServers" must be an object of servers by name.')
    return {name: _entry(path, name, entry) for name, entry in servers.items()}


def _entry(path: Path, name: str, entry: Any) -> dict[str, Any]:
    try:
        return _server(path, name, entry, _expand)
    except _Missing:  # a variable set nowhere, without a default: listed as written, off
        return {**_server(path, name, entry, lambda text: text), "enabled": False}


def _server(path: Path, name: str, entry: Any, expand: Callable[[str], str]) -> dict[str, Any]:
    where = f'{path}: server "{name}"'
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object.")
    kind = entry.get("type", "stdio")
    if kind == "stdio":
        command, args = entry.get("command"), entry.get("args", [])
        if not isinstance(command, str) or not command or not _strings(args):
            raise ConfigError(f'{where}: "command" (a string) and "args" (strings) expected.')
        env = entry.get("env", {})
        if not isinstance(env, dict) or not _strings(list(env.values())):
            raise ConfigError(f'{where}: "env" must map names to strings.')
        return {
            "type": "local",
            "command": [expand(command), *(expand(a) for a in args)],
            "environment": {k: expand(v) for k, v in env.items()},
        }
    if kind in ("http", "sse"):
        url, headers = entry.get("url"), entry.get("headers", {})
        if not isinstance(url, str) or not isinstance(headers, dict):
            raise ConfigError(f'{where}: "url" (a string) and "headers" (an object) expected.')
        remote = {"type": "remote", "url": expand(url)}
        remote["headers"] = {k: expand(str(v)) for k, v in headers.items()}
        return {**remote, "enabled": kind == "http"}  # SSE: listed, not connected
    raise ConfigError(f'{where}: "type" {kind!r} is not one of stdio, http, sse.')


def _strings(values: Any) -> bool:
    return isinstance(values, list) and all(isinstance(v, str) for v in values)


def _expand(text: str) -> str:
    """`text` as written; _Missing when a `${VAR}` in it is set nowhere, without a default."""
    if variables.unset(text):
        raise _Missing
    return text
