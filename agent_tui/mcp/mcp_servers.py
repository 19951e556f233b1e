"""MCP servers: a project's configured ones (started in the background with the engine,
their tools registered in the project's tool registry once they answer, closed with the
engine), or a session's own (an editor's, given over ACP: their tools in a registry of
their own, offered to that session alone, closed when the editor lets the session go)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from pathlib import Path

from agent_tui.config.settings import McpLocalConfig, McpServerConfig
from agent_tui.events import Event, Notice
from agent_tui.mcp.mcp_server import McpServer
from agent_tui.mcp.tool import McpTool, tool_schema
from agent_tui.sandbox.containment import Containment
from agent_tui.tool.registry import ToolRegistry

log = logging.getLogger(__name__)


def _import_sdk() -> None:
    """The SDK is slow to import: done on a thread, never on the event loop."""
    import anyio  # noqa: F401
    import mcp.client.stdio
    import mcp.client.streamable_http  # noqa: F401


class McpServers:
    def __init__(
        self,
        configs: dict[str, McpServerConfig],
        registry: ToolRegistry,
        publish: Callable[[Event], None],
        env: dict[str, str],
        directory: Path,
        *,
        containment: Containment | None = None,
        project_servers: set[str] | frozenset[str] = frozenset(),
        beside: ToolRegistry | None = None,
    ) -> None:
        self.servers = {
            name: McpServer(name, config, from_project=name in project_servers)
            for name, config in configs.items()
        }
        self.registry = registry
        self.publish = publish
        self.env = env
        """The tools' environment (secrets withheld); a server's `environment` goes on top."""
        self.directory = directory
        self.containment = containment
        """Local servers run in its sandbox: a project's always (unless the person's own
        `sandbox.outside` names it), the person's own unless `mcp.NAME.sandbox` is false."""
        self.beside = beside
        """The tools offered beside these (a session's project's): their names are taken."""
        self._starting: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start every enabled server in the background (needs a running event loop; a
        no-op without one, or when already started, or with no servers)."""
        if self._starting is not None or not any(
            s.state == "starting" for s in self.servers.values()
        ):
            return
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        self._starting = asyncio.create_task(self._start_all(), name="mcp-start")

    def add(self, configs: dict[str, McpServerConfig]) -> None:
        """Servers given at run time (an editor's, with an ACP session): started now
        beside the ones these have; a name already known keeps its server."""
        if not (new := {n: c for n, c in configs.items() if n not in self.servers}):
            return
        self.servers.update({name: McpServer(name, config) for name, config in new.items()})
        if self._starting is not None and self._starting.done():
            self._starting = None  # start() then starts only the new ones
        self.start()

    async def _start_all(self) -> None:
        try:
            await asyncio.to_thread(_import_sdk)
        except ImportError as exc:
            for server in self.servers.values():
                if server.state == "starting":
                    server.state = "failed"
                    server.error = f"the mcp package cannot be imported: {exc}"
                    self._warn(server)
            return
        starting = [s for s in self.servers.values() if s.state == "starting"]
        for server in starting:
            server.on_fail = self._warn
            server.start(self.env, self.directory, self.containment)
        await asyncio.gather(*(self._register_when_ready(s) for s in starting))

    async def _register_when_ready(self, server: McpServer) -> None:
        await server.ready.wait()
        if server.state != "connected":
            return
        for tool in server.tools:
            wrapped = McpTool(server, tool)
            beside = self.beside.get(wrapped.name) if self.beside is not None else None
            if self.registry.get(wrapped.name) is None and beside is None:
                self.registry.register(wrapped)
                continue
            taken = f"its name {wrapped.name} is taken by another tool"
            message = f"MCP server {server.name}: tool {tool.name} is not offered, {taken}."
            self.publish(Notice(level="warning", message=message))

    async def wait_ready(self) -> None:
        """Until every server has connected (its tools registered) or failed; each is
        bounded by its own timeout. Cancelling the waiter leaves the start running."""
        if self._starting is not None:
            await asyncio.shield(self._starting)

    def _warn(self, server: McpServer) -> None:
        self.publish(
            Notice(level="warning", message=f"MCP server {server.name} failed: {server.error}")
        )

    async def close(self) -> None:
        """Stop every server; no server process outlives this."""
        if self._starting is not None and not self._starting.done():
            self._starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._starting
        await asyncio.gather(*(server.close() for server in self.servers.values()))

    def render(self) -> str:
        """The /mcp screen: each server, its state and its tools."""
        if not self.servers:
            return (
                "No MCP servers configured.\n\n"
                'Add them under "mcp" in agent-tui.json, e.g.\n'
                '  "mcp": {"files": {"type": "local", "command": ["npx", "-y", '
                '"@modelcontextprotocol/server-filesystem", "."]}}'
            )
        lines: list[str] = []
        for name, server in sorted(self.servers.items()):
            config = server.config
            where = " ".join(config.command) if isinstance(config, McpLocalConfig) else config.url
            lines.append(f"{name}  [{server.state}]  {config.type}: {where}")
            if server.error:
                lines += [f"    {line}" for line in server.error.splitlines()]
            for tool in server.tools:
                wrapped = McpTool(server, tool)
                offered = self.registry.get(wrapped.name)
                registered = isinstance(offered, McpTool) and offered.server is server
                params = ", ".join(tool_schema(tool).get("properties", {}))
                mark = "" if registered else "  (not offered: name taken)"
                lines.append(f"    {wrapped.name}({params}){mark}")
            lines.append("")
        return "\n".join(lines).rstrip()
