"""The command palette (Ctrl+P) offers the app's commands (command/catalog.py)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from agent_tui.command.core import Command

if TYPE_CHECKING:
    from agent_tui.tui.app import AgentApp


class AgentCommands(Provider):
    def _run(self, command: Command) -> None:
        cast("AgentApp", self.app).run_command(command, "")

    def _commands(self) -> tuple[Command, ...]:
        return cast("AgentApp", self.app).prompt.commands

    async def discover(self) -> Hits:
        for command in self._commands():
            yield DiscoveryHit(f"/{command.name}", partial(self._run, command), help=command.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in self._commands():
            if (score := matcher.match(f"/{command.name} {command.help}")) > 0:
                yield Hit(
                    score,
                    matcher.highlight(f"/{command.name}"),
                    partial(self._run, command),
                    help=command.help,
                )
