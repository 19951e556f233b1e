"""What every part of a running session needs. Two floors: `Shared`, what is truly
process-wide (storage, events, how to ask the person, per-session state), and the
session's project as a `Workspace` (config, trust, tools, sandbox, hooks, language and
MCP servers). A process serving sessions in several projects (`serve`, `acp`) holds one
context per project directory, all on one `Shared` (`in_project`)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.bus import Bus
from agent_tui.config.hook_config import entrypoint
from agent_tui.config.settings import Config, PermissionRule
from agent_tui.events import Event, MessageUpdated, Notice, PartUpdated
from agent_tui.hooks.runner import HookResult, Hooks
from agent_tui.hooks.transcript import write_transcript
from agent_tui.live_session import LiveSession, LiveSessions
from agent_tui.project.agents import MODE_SWITCH, AgentCatalog
from agent_tui.records import MessageWithParts, Part, UserMessage
from agent_tui.redact import Redactor
from agent_tui.sandbox import Sandbox
from agent_tui.storage.db import Database
from agent_tui.storage.snapshot import Snapshots, snapshot_root
from agent_tui.todos import SessionTodos
from agent_tui.tool.base import AskPermission, Subagents, ToolContext, Worktrees
from agent_tui.tool.registry import PermissionMode, ToolRegistry
from agent_tui.trust import store
from agent_tui.workspace.workspace import Workspace

CLAUDE_MODES = {"ask": "default", "auto-edits": "acceptEdits"}
"""Permission modes by the names Claude Code's hooks read in `permission_mode`."""
ENV_FILE_NAME = "claude-env.sh"
"""`CLAUDE_ENV_FILE` in a session's temp dir."""
ConfigLoader = Callable[[Path, bool], Config]
"""The config of a project directory (the bool: record its trust first)."""


@dataclass
class Shared:
    """What every project of one engine shares."""

    db: Database
    bus: Bus
    output_dir: Path
    snapshot_dir: Path
    front_end: str
    ask: AskPermission | None = None
    """How to ask the person; None refuses every `ask` (headless run)."""
    subagents: Subagents | None = None
    """Runs the task tool's child sessions (the Engine sets it; None: no subagents)."""
    worktrees: Worktrees | None = None
    """Moves a session into a new worktree, for enter_worktree (the Engine sets it)."""
    load: ConfigLoader | None = None
    """How a project directory's config is loaded; None: the one config applies to
    every directory (a context made in code, as tests and benchmarks do)."""
    projects: dict[Path, EngineContext] = field(default_factory=dict)
    sessions: LiveSessions = field(default_factory=LiveSessions)
    """Each open session's state (live_session.py)."""
    snapshots: dict[Path, Snapshots] = field(default_factory=dict)
    mode_switch: str = MODE_SWITCH
    """How the person switches agents in this front-end, in its words (its view names
    it: the app's key, an editor's mode selector); plan mode's refusal says it."""

    def __post_init__(self) -> None:
        self.sessions.publish = self.bus.publish


class EngineContext:
    """One project's view of the engine: its workspace on the process's `Shared`."""

    def __init__(
        self,
        db: Database,
        config: Config,
        *,
        bus: Bus | None = None,
        registry: ToolRegistry | None = None,
        ask: AskPermission | None = None,
        output_dir: Path | None = None,
        snapshot_dir: Path | None = None,
        front_end: str = "agent-tui",
        load: ConfigLoader | None = None,
        shared: Shared | None = None,
    ) -> None:
        self.shared = shared or Shared(
            db=db,
            bus=bus or Bus(),
            output_dir=output_dir or paths.tool_output_dir(),
            snapshot_dir=snapshot_dir or snapshot_root(),
            front_end=front_end,
            ask=ask,
            load=load,
        )
        directory = Path(config.project.directory) if config.project else Path.cwd()
        self.workspace = self._workspace(directory, config, registry or ToolRegistry.default())
        self._registry: ToolRegistry | None = None
        self.shared.projects.setdefault(self.workspace.directory, self)

    def _workspace(self, directory: Path, config: Config, registry: ToolRegistry) -> Workspace:
        shared = self.shared
        path = getattr(shared.db, "path", None)  # a view's stand-in store may have none
        database = Path(path) if path is not None else paths.database_path()
        journal = [database.with_name(database.name + end) for end in ("-wal", "-shm", "-journal")]
        workspace = Workspace(
            directory,
            config,
            registry=registry,
            publish=self.publish,
            own_dirs=[paths.data_dir(), paths.config_dir(), shared.snapshot_dir],
            own_files=[database, *journal],
            output_dir=shared.output_dir,
            ask=lambda: shared.ask,
        )
        workspace.hooks.entrypoint = entrypoint(shared.front_end)
        return workspace

    # ---- projects ----------------------------------------------------------------------

    def in_project(self, directory: Path | str) -> EngineContext:
        """The context of the project a session in `directory` belongs to: its own config,
        agents, sandbox, hooks and servers, on this engine's shared state."""
        shared = self.shared
        if shared.load is None:
            return self
        real = Path(directory).resolve()
        return shared.projects.get(real) or EngineContext(
            self.db, shared.load(real, False), shared=shared
        )

    async def retrust(self, *, keep: bool = True) -> None:
        """The person trusted this project: record it (`keep` False: for this process
        only) and put a workspace with its full config in place, its MCP servers
        starting; what the old one started stops."""
        old = self.workspace
        if self.shared.load is None:
            old.run_for_now()
            return
        config = self.shared.load(old.directory, True)
        if not keep:
            store.revoke(old.directory)
        self.workspace = self._workspace(old.directory, config, ToolRegistry.default())
        await old.close()
        self.workspace.mcp.start()

    # ---- the workspace's parts ---------------------------------------------------------

    @property
    def config(self) -> Config:
        return self.workspace.config

    @property
    def registry(self) -> ToolRegistry:
        return self._registry or self.workspace.registry

    @registry.setter
    def registry(self, value: ToolRegistry) -> None:
        """A step's or subagent's own tools, on a copy of the context."""
        self._registry = value

    def with_session_tools(self, session_id: str) -> EngineContext:
        """The context a session's turn runs in: its tools are this project's and those of
        the session's own MCP servers (an editor's), on a copy; this one when it has none."""
        own = self.shared.sessions.get(session_id)
        if own is None or own.mcp is None:
            return self
        found = copy.copy(self)
        found.registry = self.registry.joined(own.mcp.registry)
        return found

    @property
    def redact(self) -> Redactor:
        return self.workspace.redact

    @property
    def sandbox(self) -> Sandbox:
        return self.workspace.sandbox

    @property
    def hooks(self) -> Hooks:
        return self.workspace.hooks

    def agent_catalog(self, directory: Path) -> AgentCatalog:
        """The agents of the project `directory` is in."""
        return self.in_project(directory).workspace.agent_catalog()

    # ---- shared ------------------------------------------------------------------------

    @property
    def db(self) -> Database:
        return self.shared.db

    @property
    def bus(self) -> Bus:
        return self.shared.bus

    @property
    def ask(self) -> AskPermission | None:
        return self.shared.ask

    @ask.setter
    def ask(self, value: AskPermission | None) -> None:
        self.shared.ask = value

    @property
    def subagents(self) -> Subagents | None:
        return self.shared.subagents

    @subagents.setter
    def subagents(self, value: Subagents | None) -> None:
        self.shared.subagents = value

    @property
    def output_dir(self) -> Path:
        return self.shared.output_dir

    @property
    def front_end(self) -> str:
        return self.shared.front_end

    def live(self, session_id: str) -> LiveSession:
        """The open session's state in this engine (made on first use)."""
        return self.shared.sessions(session_id)

    @property
    def permission_modes(self) -> Mapping[str, PermissionMode]:
        """Session id -> permission mode, for the tool registry."""
        return self.shared.sessions.modes

    # ---- behaviour ---------------------------------------------------------------------

    def publish(self, event: Event) -> None:
        self.shared.bus.publish(event)

    async def add_message(self, info: UserMessage, part: Part) -> MessageWithParts:
        """Save a new message with its one part (on disk now) and announce both."""
        await self.db.upsert_message(info)
        await self.db.upsert_part(part, flush=True)
        self.publish(MessageUpdated(info=info))
        self.publish(PartUpdated(part=part))
        return MessageWithParts(info=info, parts=[part])

    async def save_part(self, part: Part) -> None:
        """Save a part of a saved message (on disk now) and announce it."""
        await self.db.upsert_part(part, flush=True)
        self.publish(PartUpdated(part=part))

    def tool_context(
        self,
        session_id: str,
        message_id: str,
        directory: Path,
        *,
        call_id: str = "",
        abort: asyncio.Event | None = None,
        permissions: dict[str, PermissionRule] | None = None,
    ) -> ToolContext:
        """What a tool call needs: the session's folder, permissions, the environment and
        redaction policy, and the session's history (for recall)."""
        live, person = self.live(session_id), self._person_session(session_id)
        return ToolContext(
            session_id=session_id,
            message_id=message_id,
            call_id=call_id,
            directory=directory,
            output_dir=self.output_dir,
            truncation=self.config.truncation,
            images=self.config.images,
            abort=abort or asyncio.Event(),
            ask=self.ask,
            permissions=(
                permissions if permissions is not None else self.permissions_for(session_id)
            ),
            redact=self.redact,
            env=self.workspace.tool_env.env,
            history=self.db,
            subagents=self.subagents,
            worktrees=self.shared.worktrees,
            todos=SessionTodos(self.db, self.publish),
            editor=live.editor,
            sandbox=self.sandbox,
            background=live.background,
            network=person.network,
            env_file=person.env_file,
            mode_switch=self.shared.mode_switch,
        )

    def claude_env_file(self, session_id: str) -> Path:
        """The session's `CLAUDE_ENV_FILE`, in its temp dir (a project's SessionStart
        hook, in the sandbox, writes there; the session's bash commands read it)."""
        path = self.sandbox.temp_dir(session_id) / ENV_FILE_NAME
        path.touch(mode=0o600, exist_ok=True)
        self.live(session_id).env_file = path
        return path

    def _person_session(self, session_id: str) -> LiveSession:
        """The session the person talks to: a subagent's is its caller's, whose shared
        network it uses (it checks the server its caller started) and `CLAUDE_ENV_FILE`."""
        live = self.live(session_id)
        while live.subagent is not None:
            live = self.live(live.subagent[0])
        return live

    def note_redactions(self, session_id: str, count: int) -> None:
        """One notice per step: how many secrets its tools had in their outputs."""
        live = self.live(session_id)
        live.redactions = total = live.redactions + count
        message = f"{count} secret{'s' if count != 1 else ''} redacted from tool output"
        if total > count:
            message += f" ({total} in this session)"
        self.publish(Notice(session_id=session_id, level="info", message=message))

    def snapshots(self, directory: Path) -> Snapshots | None:
        """The snapshot repository of a session directory; None when turned off in config."""
        if not self.config.snapshot:
            return None
        found = self.shared.snapshots
        if directory not in found:
            found[directory] = Snapshots(directory, self.shared.snapshot_dir)
        return found[directory]

    async def hook_payload(
        self, session_id: str, directory: Path, *, effort: bool = False
    ) -> dict[str, object]:
        """The fields every hook event carries (Claude Code's): the session, its
        transcript written out now, the prompt being answered, and the permission mode
        (`plan` in a read-only agent's tool calls). In a subagent, the session is its
        caller's, and the subagent is `agent_id` and `agent_type`. `effort`: with the
        reasoning effort the step asked for, where one was set (Claude Code gives it to
        tool events, Stop and SubagentStop)."""
        subagent = self.live(session_id).subagent
        main = subagent[0] if subagent is not None else session_id
        path = await write_transcript(self.db, main, directory)
        mode = CLAUDE_MODES.get(self.permission_modes.get(session_id, "ask"), "default")
        policy = self.registry.policy  # a step's agent: plan mode is read-only
        mode = "plan" if policy is not None and policy.read_only else mode
        payload: dict[str, object] = {"session_id": main, "transcript_path": str(path)}
        if (prompt_id := self.live(main).prompt_id) is not None:
            payload["prompt_id"] = prompt_id
        payload["permission_mode"] = mode
        if subagent is not None:
            payload.update(agent_id=session_id, agent_type=subagent[1])
        if effort and (level := self.live(session_id).step_effort) is not None:
            payload["effort"] = {"level": level}
        return payload

    async def fire_hook(
        self, event: str, session_id: str, directory: Path, fields: Mapping[str, Any], **fire: Any
    ) -> HookResult:
        """Fire `event` with the hooks of the project at `directory` (`fire`: Hooks.fire's
        `subject`, …), its payload the fields every event carries (`hook_payload`) and its
        own `fields`; an empty result when no hook listens to it (nothing is written then)."""
        hooks = self.in_project(directory).hooks
        if not hooks.any_for(event):
            return HookResult()
        payload = {**await self.hook_payload(session_id, directory), **fields}
        return await hooks.fire(event, directory, payload, **fire)

    def permissions_for(self, session_id: str) -> dict[str, PermissionRule]:
        """Config permissions plus the person's 'always allow' answers in this session."""
        live = self.live(session_id)
        if live.permissions is None:
            live.permissions = dict(self.config.permission)
        return live.permissions
