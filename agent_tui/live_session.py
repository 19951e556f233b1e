"""One open session's state in a running engine: never saved, gone with the process.
Every front-end's per-session state lives here, one object per session, instead of in
dicts keyed by session id on a shared context (DESIGN.md: "a live session is one
object"). `LiveSessions` holds them for an engine (engine_context.Shared)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_tui.config.settings import McpServerConfig, PermissionRule, ReasoningEffort
from agent_tui.events import Event, Notice
from agent_tui.mcp.mcp_servers import McpServers
from agent_tui.sandbox.session_network import SessionNetwork
from agent_tui.tool.background import BackgroundCommands
from agent_tui.tool.base import EditorFiles
from agent_tui.tool.registry import PermissionMode

if TYPE_CHECKING:
    from agent_tui.workspace.workspace import Workspace


@dataclass
class LiveSession:
    id: str
    permissions: dict[str, PermissionRule] | None = None
    """Config permissions plus the person's 'always allow' answers (made on first use)."""
    permission_mode: PermissionMode = "ask"
    """The quick permission mode (ask / auto-edits)."""
    editor: EditorFiles | None = None
    """The editor's file access (an ACP client's fs) for read, edit, write."""
    mcp: McpServers | None = None
    """The editor's own MCP servers (ACP `mcpServers`): their tools are this session's
    alone, beside its project's (`EngineContext.with_session_tools`)."""
    reasoning_effort: ReasoningEffort | None = None
    """Chosen by the person (an editor's thought level) over the agent's and the model's."""
    step_effort: str | None = None
    """The reasoning effort the newest step asked its model for (the person's, the
    agent's or the model's setting): hooks' `effort`. None: none was set."""
    redactions: int = 0
    """Secrets redacted from tool outputs and errors since the engine started."""
    preparing: asyncio.Task[None] | None = None
    """The summary being prepared in the background (context/prepared.py)."""
    run: asyncio.Task[Any] | None = None
    """The loop running here."""
    abort: asyncio.Event | None = None
    """Set to interrupt that loop."""
    claimed: bool = False
    """A prompt here took the session's lock and its run has not started yet."""
    newest: str | None = None
    """The newest message sent from this engine (what a follower waits for)."""
    arrivals: int = 0
    """Messages sent here while the loop ran (queued into it), counted when claimed."""
    arriving: int = 0
    """Of those, the ones still being saved; `stored` is set as each is."""
    stored: asyncio.Event = field(default_factory=asyncio.Event)
    prompt_id: str | None = None
    """The prompt being answered (a UUID made as it arrives): hooks' `prompt_id`."""
    subagent: tuple[str, str] | None = None
    """A subagent's session: (its caller's session, its agent type). Its hooks carry the
    caller's session and its own as `agent_id`, as Claude Code's subagents' do."""
    env_file: Path | None = None
    """`CLAUDE_ENV_FILE`: the `export` lines SessionStart hooks wrote, which every later
    bash command of the session runs first (in the session's temp dir)."""
    background: BackgroundCommands = field(init=False)
    """The commands its model left running (bash `run_in_background`): listed and stopped
    by the views through `SessionScope.background`, stopped when it is let go (`detach`)."""
    network: SessionNetwork = field(default_factory=SessionNetwork)
    """The loopback its sandboxed commands share while sandbox.network is off (a server
    one starts answers the next); let go with the session (`detach`)."""

    def __post_init__(self) -> None:
        self.background = BackgroundCommands(self.id)

    @property
    def is_preparing(self) -> bool:
        return self.preparing is not None and not self.preparing.done()

    def attach_servers(self, workspace: Workspace, servers: dict[str, McpServerConfig]) -> None:
        """An editor's own MCP servers (ACP `mcpServers`) for this session alone: started
        now, their tools offered in its turns beside its project's, never in another
        session's; a name the session has already keeps its server."""
        if self.mcp is None:
            self.mcp = workspace.session_servers()
        self.mcp.add(servers)

    async def detach(self) -> None:
        """The editor (or the engine) let the session go: the files on disk again, its own
        MCP servers and its background commands stopped, its network let go."""
        await self.background.stop_all()
        self.network.close()
        self.editor = None
        if self.mcp is not None:
            servers, self.mcp = self.mcp, None
            await servers.close()


class LiveSessions:
    """The live sessions of one engine, made on first use."""

    def __init__(self) -> None:
        self.publish: Callable[[Event], None] | None = None
        """Where a session's changes of background commands are announced (the bus)."""
        self._sessions: dict[str, LiveSession] = {}
        self._warned = False
        self.modes = _Modes(self._sessions)
        """Session id -> permission mode, as the tool registry reads it (one object, so
        that the registry's views of it stay cached)."""

    def __call__(self, session_id: str) -> LiveSession:
        if (found := self._sessions.get(session_id)) is None:
            found = self._sessions[session_id] = LiveSession(session_id)
            found.background.publish = self.publish
            found.network.warn = self._warn_once
        return found

    def _warn_once(self, line: str) -> None:
        """A session's network could not be shared: said once per engine (the reason is
        this machine's, the same for every session)."""
        if not self._warned and self.publish is not None:
            self._warned = True
            self.publish(Notice(level="warning", message=line))

    def get(self, session_id: str) -> LiveSession | None:
        return self._sessions.get(session_id)

    def __iter__(self) -> Iterator[LiveSession]:
        return iter(list(self._sessions.values()))


class _Modes(Mapping[str, PermissionMode]):
    def __init__(self, sessions: dict[str, LiveSession]) -> None:
        self._sessions = sessions

    def __getitem__(self, session_id: str) -> PermissionMode:
        return self._sessions[session_id].permission_mode

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._sessions))

    def __len__(self) -> int:
        return len(self._sessions)
