"""One MCP server: its connection (a process over stdio, or streamable HTTP), owned by
one background task from start to close, and the calls made through it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from agent_tui import procs
from agent_tui.aborting import unless_aborted
from agent_tui.config.settings import McpLocalConfig, McpRemoteConfig
from agent_tui.errors import ConfigError, SandboxError
from agent_tui.sandbox import SandboxPolicy, explain
from agent_tui.sandbox.containment import Containment

if TYPE_CHECKING:
    import mcp_types
    from mcp import ClientSession

log = logging.getLogger(__name__)

ServerState = Literal["starting", "connected", "failed", "disabled", "closed"]

ENV_REFERENCE = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
CLOSE_TIMEOUT = 8.0
"""Seconds to wait for a server to wind down: longer than the SDK's own bounded waits."""


@dataclass
class McpServer:
    """A configured server and, once started, its live session."""

    name: str
    config: McpLocalConfig | McpRemoteConfig
    state: ServerState = "starting"
    error: str = ""
    """Why it failed (with its stderr tail for a local server)."""
    tools: list[mcp_types.Tool] = field(default_factory=list)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once the server is connected or has failed (bounded by its timeout)."""
    _session: ClientSession | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None
    _stderr: IO[bytes] | None = None
    on_fail: Callable[[McpServer], None] | None = None
    """Told once when the server fails to start or stops answering."""
    policy: SandboxPolicy | None = None
    """The sandbox it runs in (None: unsandboxed or remote)."""
    from_project: bool = False
    """A project's file defines it: it runs in the sandbox whatever its `sandbox` says."""
    _outside_key: str = ""
    """The setting that would run it outside the sandbox, for a blocked start's line."""
    expand: Callable[[str, str], str] | None = None
    """A project's server: (value, config field) -> the value with your environment in it,
    for its command, environment, url and headers, a secret only if the trust named it
    (Workspace.mcp_expansion). None: your own, `{env:NAME}` in environment and headers."""

    def __post_init__(self) -> None:
        if not self.config.enabled:
            self.state = "disabled"
            self.ready.set()

    @property
    def timeout(self) -> float:
        return self.config.timeout / 1000

    def start(self, env: dict[str, str], cwd: Path, containment: Containment | None = None) -> None:
        """Connect in a background task (it owns the connection until close())."""
        if self.state == "starting" and self._task is None:
            self._task = asyncio.create_task(
                self._run(env, cwd, containment), name=f"mcp-{self.name}"
            )

    async def _run(self, env: dict[str, str], cwd: Path, containment: Containment | None) -> None:
        import anyio
        from mcp import ClientSession

        try:
            async with contextlib.AsyncExitStack() as stack:
                transport = await self._transport(env, cwd, containment)
                read, write = await stack.enter_async_context(transport)
                session = await stack.enter_async_context(ClientSession(read, write))
                with anyio.fail_after(self.timeout):
                    await session.initialize()
                    self.tools = await _list_tools(session)
                self._session = session
                self.state = "connected"
                self.ready.set()
                await self._stop.wait()
        except Exception as exc:
            self._fail(_describe(exc, self.timeout))
        finally:
            self._session = None
            if self.state in ("starting", "connected"):  # closed (or cancelled) by us
                self.state = "closed"
            self.ready.set()
            if self._stderr is not None:
                self._stderr.close()

    async def _transport(
        self, env: dict[str, str], cwd: Path, containment: Containment | None
    ) -> Any:
        """The SDK's transport context for this server's type."""
        if isinstance(self.config, McpLocalConfig):
            from mcp.client.stdio import StdioServerParameters, stdio_client

            extra = {
                key: self._value(value, f"environment.{key}", own_env=True)
                for key, value in self.config.environment.items()
            }
            # The SDK starts it in its own session; the marker lets procs.py stop it
            # (and anything it spawns) should agent-tui die without closing it.
            argv = [self._value(word, "command", own_env=False) for word in self.config.command]
            full_env = procs.process_env({**env, **extra})
            contained = self.from_project or self.config.sandbox
            if containment is not None and contained:  # SandboxError (sandbox.required) fails it
                name = f"mcp:{self.name}"  # a missing program: FileNotFoundError, as unwrapped
                wrapped = await containment.wrap(name, argv, full_env, cwd=cwd)
                argv, full_env, self.policy = wrapped.argv, wrapped.env, wrapped.policy
                self._outside_key = (
                    f'your own config\'s "sandbox": {{"outside": {{"{containment.directory}": '
                    f'["{name}"]}}}} runs it outside the sandbox'
                    if self.from_project
                    else f"mcp.{self.name}.sandbox: false runs it unsandboxed"
                )
            elif containment is not None:  # the person's own, unsandboxed by their config
                full_env = containment.own_env(full_env)
            command, *args = argv
            self._stderr = await asyncio.to_thread(tempfile.TemporaryFile)
            parameters = StdioServerParameters(command=command, args=args, env=full_env, cwd=cwd)
            return stdio_client(parameters, errlog=self._stderr)  # type: ignore[arg-type]
        from mcp.shared._httpx_utils import create_mcp_http_client

        headers = {
            key: self._value(value, f"headers.{key}", own_env=True).strip()  # "Bearer " left
            for key, value in self.config.headers.items()
        }
        url = self._value(self.config.url, "url", own_env=False)
        return _remote(url, create_mcp_http_client(headers=headers))

    def _value(self, value: str, where: str, *, own_env: bool) -> str:
        """A value of its config as the server starts: a project's server's through
        `expand`; your own server's `{env:NAME}` expanded where `own_env`, else as written."""
        where = f"mcp.{self.name}.{where}"
        if self.expand is not None:
            return self.expand(value, where)
        return expand_env(value, where) if own_env else value

    def _fail(self, reason: str) -> None:
        if self.state == "failed":
            return
        self.state = "failed"
        tail = procs.stderr_tail(self._stderr)
        self.error = f"{reason}\n{tail}" if tail else reason
        if tail and self.policy is not None and (blocked := explain(tail, self.policy)):
            self.error += f"\n{blocked} ({self._outside_key}.)"
        if self.on_fail is not None:
            self.on_fail(self)

    async def call(
        self, tool: str, arguments: dict[str, Any], abort: asyncio.Event
    ) -> mcp_types.CallToolResult:
        """Call one of its tools: RuntimeError when the server is not running or the call
        fails, InterruptedError when `abort` is set first."""
        if (session := self._session) is None or self.state != "connected":
            raise RuntimeError(f"the server is not running ({self.state}). {self.error}".strip())
        try:
            result = await unless_aborted(session.call_tool(tool, arguments), abort)
        except Exception as exc:
            if _connection_closed(exc):
                self._fail("the server stopped")
                self._stop.set()  # the owner task winds the connection down
                raise RuntimeError(self.error) from exc
            raise RuntimeError(_describe(exc, self.timeout)) from exc
        if result is None:
            raise InterruptedError("the call was interrupted")
        return result

    async def close(self) -> None:
        """Stop the server (a local one's process is terminated by the SDK)."""
        self._stop.set()
        if (task := self._task) is None or task.done():
            return
        if self.state == "starting":
            task.cancel()  # the SDK's own shutdown is shielded: the process still ends
        try:
            await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        if self.state == "connected":
            self.state = "closed"


@contextlib.asynccontextmanager
async def _remote(url: str, client: Any) -> Any:
    """streamable_http_client over our own httpx client (it carries the headers)."""
    from mcp.client.streamable_http import streamable_http_client

    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams


async def _list_tools(session: ClientSession) -> list[mcp_types.Tool]:
    """Every page of tools/list."""
    import mcp_types

    result = await session.list_tools()
    tools = list(result.tools)
    while result.next_cursor:
        result = await session.list_tools(
            params=mcp_types.PaginatedRequestParams(cursor=result.next_cursor)
        )
        tools.extend(result.tools)
    return tools


def expand_env(value: str, where: str) -> str:
    """`{env:NAME}` anywhere in a value (`Bearer {env:TOKEN}`) -> the variable's value."""

    def variable(match: re.Match[str]) -> str:
        name = match.group(1)
        if not os.environ.get(name):
            raise ConfigError(f"Config field {where} uses {{env:{name}}}, but {name} is not set.")
        return os.environ[name]

    return ENV_REFERENCE.sub(variable, value)


def _connection_closed(exc: BaseException) -> bool:
    import mcp_types
    from mcp.shared.exceptions import MCPError

    return isinstance(exc, MCPError) and exc.error.code == mcp_types.CONNECTION_CLOSED


def _describe(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError):
        return f"no answer within {timeout:g} s (raise mcp.<name>.timeout, in ms)"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, (ConfigError, SandboxError)):
        return str(exc)
    if _connection_closed(exc):
        return "the server closed the connection (did its process exit?)"
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(inner, timeout) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}".rstrip(": ")
