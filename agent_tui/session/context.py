"""What every part of a running session needs: storage, config, events, tools."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent_tui import paths
from agent_tui.bus import Bus
from agent_tui.config import Config, PermissionLevel, resolve_env_ref
from agent_tui.errors import ConfigError
from agent_tui.events import Event, MessageUpdated, PartUpdated
from agent_tui.secrets import Redactor
from agent_tui.storage.db import Database
from agent_tui.storage.models import MessageWithParts, Part, UserMessage
from agent_tui.tool.base import AskPermission
from agent_tui.tool.registry import ToolRegistry


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
    redact: Redactor = field(init=False)

    def __post_init__(self) -> None:
        self.redact = Redactor.from_environment(_configured_keys(self.config))

    def publish(self, event: Event) -> None:
        self.bus.publish(event)

    async def add_message(self, info: UserMessage, part: Part) -> MessageWithParts:
        """Save a new message with its one part (on disk now) and announce both."""
        await self.db.upsert_message(info)
        await self.db.upsert_part(part, flush=True)
        self.publish(MessageUpdated(info=info))
        self.publish(PartUpdated(part=part))
        return MessageWithParts(info=info, parts=[part])

    def permissions_for(self, session_id: str) -> dict[str, PermissionLevel]:
        """Config permissions plus the person's 'always allow' answers in this session."""
        if session_id not in self.session_permissions:
            self.session_permissions[session_id] = dict(self.config.permission)
        return self.session_permissions[session_id]


def _configured_keys(config: Config) -> list[str]:
    keys = []
    for name, provider in config.provider.items():
        if provider.api_key is None:
            continue
        raw = provider.api_key.get_secret_value()
        try:
            keys.append(resolve_env_ref(raw, f"provider.{name}.api_key"))
        except ConfigError:
            continue  # reported when that provider is used
    return [k for k in keys if k]
