"""What every part of a running session needs: storage, config, events, tools."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field
from pathlib import Path

from agent_tui import paths
from agent_tui.agents import AgentCatalog, load_agents
from agent_tui.bus import Bus
from agent_tui.config import (
    CONFIG_FILE_NAME,
    Config,
    PermissionLevel,
    ReasoningEffort,
    resolve_env_ref,
)
from agent_tui.errors import ConfigError
from agent_tui.events import Event, MessageUpdated, Notice, PartUpdated
from agent_tui.hooks import trust
from agent_tui.hooks.runner import Hooks
from agent_tui.lsp.servers import LspServers
from agent_tui.redact import Redactor
from agent_tui.sandbox import Sandbox
from agent_tui.secrets import ToolEnvironment
from agent_tui.skills import USER_SKILLS_DIR
from agent_tui.storage.db import Database
from agent_tui.storage.models import MessageWithParts, Part, UserMessage
from agent_tui.storage.snapshot import Snapshots, snapshot_root
from agent_tui.todos import SessionTodos
from agent_tui.tool.base import AskPermission, EditorFiles, Subagents, ToolContext
from agent_tui.tool.registry import PermissionMode, ToolRegistry
from agent_tui.tool.task import TASK_TOOL, TaskTool


@dataclass
class EngineContext:
    db: Database
    config: Config
    bus: Bus = field(default_factory=Bus)
    registry: ToolRegistry = field(default_factory=ToolRegistry.default)
    ask: AskPermission | None = None
    """How to ask the person; None refuses every `ask` (headless run)."""
    output_dir: Path = field(default_factory=paths.tool_output_dir)
    session_permissions: dict[str, dict[str, PermissionLevel]] = field(default_factory=dict)
    tool_env: ToolEnvironment = field(init=False)
    """The environment of processes the tools start, and the variables withheld from it."""
    redact: Redactor = field(init=False)
    redactions: dict[str, int] = field(default_factory=dict)
    """Per session: secrets redacted from tool outputs and errors since the engine started."""
    snapshot_dir: Path = field(default_factory=snapshot_root)
    """Shadow git repositories of the projects' working trees (undo/redo)."""
    _snapshots: dict[Path, Snapshots] = field(default_factory=dict)
    subagents: Subagents | None = None
    """Runs the task tool's child sessions (the Engine sets it; None: no subagents)."""
    agents: AgentCatalog | None = None
    """The agents (agents.py); loaded by `agent_catalog` for the first directory asked."""
    permission_modes: dict[str, PermissionMode] = field(default_factory=dict)
    """Per session: the quick permission mode (ask / auto-edits); in memory, never saved."""
    editors: dict[str, EditorFiles] = field(default_factory=dict)
    """Per session: the editor's file access (an ACP client's fs) for read, edit, write."""
    reasoning_efforts: dict[str, ReasoningEffort] = field(default_factory=dict)
    """Per session: a reasoning effort chosen by the person (an editor's thought level)
    over the agent's and the model's own; in memory, never saved."""
    preparing: dict[str, asyncio.Task[None]] = field(default_factory=dict)
    """Summaries being prepared in the background, per session (context/prepared.py)."""
    handed_over: dict[str, tuple[str, str, str]] = field(default_factory=dict)
    """Per session preparing here: (model, agent, last message) for a detached process to
    finish it when this engine closes (context/preparing.py)."""
    sandbox: Sandbox = field(init=False)
    """Where commands and local MCP servers run (sandbox/)."""
    hooks: Hooks = field(init=False)
    """The person's hook commands (hooks/): the same for every front-end."""
    lsp: LspServers = field(init=False)
    """Language servers for diagnostics after edits (lsp/), started when first needed."""
    front_end: str = "agent-tui"
    """What runs this engine (`agent-tui run`, `the agent-tui app`, …): named to another
    process that finds a session busy here."""

    def __post_init__(self) -> None:
        policy = self.config.shell.env
        self.tool_env = ToolEnvironment.build(
            os.environ, policy.exclude, policy.include, policy.set
        )
        self.redact = Redactor(self.tool_env.known_secrets(_configured_keys(self.config)))
        self.sandbox = _sandbox(self)
        self.hooks = Hooks(
            self.config.hook_sources,
            trusted=lambda source: self.config.trust_project_hooks or trust.is_trusted(source),
            warn=self._warn,
        )
        self.lsp = LspServers(self.config.lsp, self.tool_env.env, self._warn)

    def _warn(self, line: str) -> None:
        self.publish(Notice(level="warning", message=line))

    def publish(self, event: Event) -> None:
        self.bus.publish(event)

    async def add_message(self, info: UserMessage, part: Part) -> MessageWithParts:
        """Save a new message with its one part (on disk now) and announce both."""
        await self.db.upsert_message(info)
        await self.db.upsert_part(part, flush=True)
        self.publish(MessageUpdated(info=info))
        self.publish(PartUpdated(part=part))
        return MessageWithParts(info=info, parts=[part])

    def tool_context(
        self,
        session_id: str,
        message_id: str,
        directory: Path,
        *,
        call_id: str = "",
        abort: asyncio.Event | None = None,
        permissions: dict[str, PermissionLevel] | None = None,
    ) -> ToolContext:
        """What a tool call needs: the session's folder, permissions, the environment and
        redaction policy, and the session's history (for recall)."""
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
            env=self.tool_env.env,
            history=self.db,
            subagents=self.subagents,
            todos=SessionTodos(self.db, self.publish),
            editor=self.editors.get(session_id),
            sandbox=self.sandbox,
        )

    def note_redactions(self, session_id: str, count: int) -> None:
        """One notice per step: how many secrets its tools had in their outputs."""
        total = self.redactions.get(session_id, 0) + count
        self.redactions[session_id] = total
        message = f"{count} secret{'s' if count != 1 else ''} redacted from tool output"
        if total > count:
            message += f" ({total} in this session)"
        self.publish(Notice(session_id=session_id, level="info", message=message))

    def snapshots(self, directory: Path) -> Snapshots | None:
        """The snapshot repository of a session directory; None when turned off in config."""
        if not self.config.snapshot:
            return None
        if directory not in self._snapshots:
            self._snapshots[directory] = Snapshots(directory, self.snapshot_dir)
        return self._snapshots[directory]

    def agent_catalog(self, directory: Path) -> AgentCatalog:
        """The agents, loaded once (a stable prompt prefix): a warning per bad file, and
        the task tool told which subagents it offers."""
        if self.agents is None:
            self.agents = load_agents(self.config, directory)
            for warning in self.agents.warnings:
                self.publish(Notice(session_id=None, level="warning", message=warning))
            subagents = [(a.name, a.description) for a in self.agents.subagents()]
            if subagents and self.registry.get(TASK_TOOL) is not None:
                self.registry.register(TaskTool(subagents))
        return self.agents

    def permissions_for(self, session_id: str) -> dict[str, PermissionLevel]:
        """Config permissions plus the person's 'always allow' answers in this session."""
        return self.session_permissions.setdefault(session_id, dict(self.config.permission))


def _sandbox(ctx: EngineContext) -> Sandbox:
    """The sandbox, with agent-tui's own data hidden from commands: the data and config
    dirs, the database wherever it is, the snapshot repositories, config files given
    elsewhere. Saved tool outputs (the model is told their paths) and the user's skills
    (their scripts are run) stay readable."""
    path = getattr(ctx.db, "path", None)  # a view's stand-in store may have none
    database = Path(path) if path is not None else paths.database_path()
    journal = [database.with_name(database.name + end) for end in ("-wal", "-shm", "-journal")]
    project_config = Path.cwd() / CONFIG_FILE_NAME  # the project's own: commands may read it
    sources = [Path(s) for s in ctx.config.sources if Path(s) != project_config]
    return Sandbox(
        ctx.config.sandbox,
        own_dirs=[paths.data_dir(), paths.config_dir(), ctx.snapshot_dir],
        own_files=[database, *journal, *sources],
        revealed=[ctx.output_dir, paths.config_dir() / USER_SKILLS_DIR],
    )


def _configured_keys(config: Config) -> dict[str, str]:
    """`provider.<name>.api_key` -> the key, `{env:NAME}` resolved."""
    keys: dict[str, str] = {}
    for name, provider in config.provider.items():
        if provider.api_key is None:
            continue
        where = f"provider.{name}.api_key"
        try:
            key = resolve_env_ref(provider.api_key.get_secret_value(), where)
        except ConfigError:
            continue  # reported when that provider is used
        if key:
            keys[where] = key
    return keys
