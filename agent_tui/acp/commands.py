"""The commands an editor offers: the table's (command/table.py) that ACP offers and the
custom ones, advertised with their descriptions and run through command/run.py. Their
answers are agent text; compaction shows itself through the engine's events."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from agent_tui.command import table
from agent_tui.command.run import HANDLERS, as_markdown, execute
from agent_tui.custom_commands import CustomCommand, load_custom_commands
from agent_tui.session.engine import Engine
from agent_tui.session.undo import TurnRestored, UndoConflict


def _command(command: table.Command) -> AvailableCommand:
    hint = command.arg_hint
    return AvailableCommand(
        name=command.name,
        description=command.help,
        input=AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if hint else None,
    )


async def custom_commands(directory: Path) -> dict[str, CustomCommand]:
    loaded = await asyncio.to_thread(load_custom_commands, directory, table.builtin_names())
    return loaded.commands


def offered(custom: dict[str, CustomCommand]) -> tuple[table.Command, ...]:
    return (*table.offered_in(table.ACP), *(table.custom(c.name, c.help) for c in custom.values()))


def available(custom: dict[str, CustomCommand]) -> list[AvailableCommand]:
    return [_command(command) for command in offered(custom)]


@dataclass
class Invocation:
    """A prompt that names a command: `/name args`."""

    name: str
    args: str


def invocation(text: str, custom: dict[str, CustomCommand]) -> Invocation | None:
    """The command a prompt starts with, if it names one agent-tui accepts (else the
    text is sent to the model as typed, as in the app)."""
    found = table.parse(text)
    if found is None:
        return None
    name, args = found
    command = table.called(name, offered(custom))
    return Invocation(command.name, args) if command is not None else None


Say = Callable[[str], Awaitable[None]]


async def run_builtin(
    engine: Engine, session_id: str, call: Invocation, model: str | None, say: Say
) -> None:
    """Run a built-in command; what it reports is said as agent text. Errors a person
    can cause (AgentTuiError) propagate as in the app."""
    if call.name not in HANDLERS:
        raise ValueError(f"not a built-in command: {call.name}")
    try:
        result = await execute(engine, session_id, call.name, call.args, model=model)
    except UndoConflict as exc:
        await say(f"{exc}\n\nRun /{call.name} {table.FORCE} to overwrite your changes.")
        return
    text = as_markdown(result)  # editors render Markdown: a report goes fenced
    if isinstance(result, TurnRestored) and result.undone and result.prompt:
        text += f"\n\nIts prompt was:\n\n{result.prompt}"
    if text:
        await say(text)
