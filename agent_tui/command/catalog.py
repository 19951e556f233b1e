"""Every command: the built-in ones (each module of this package defines its own) and the
custom Markdown commands of a project (project/custom_commands.py), found by name, alias or a
unique prefix, as the views offer and complete them."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from agent_tui import command as package
from agent_tui.command.core import Call, Command, NoArgs, rest

if TYPE_CHECKING:
    from agent_tui.project.custom_commands import CustomCommand
    from agent_tui.session.engine import Engine
    from agent_tui.session.expansion import Expansion

VIEW_NAMES = ("run", "acp", "serve")
"""The CLI's own subcommands: the views, not commands (no custom command takes them)."""


ORDER = ("compact", "uncompact", "summary", "undo", "redo", "pin", "unpin", "diff", "context")
"""The first commands listed (the rest follow by name)."""


@cache
def builtins() -> tuple[Command, ...]:
    """Every Command a module of this package defines."""
    found: dict[str, Command] = {}
    for module in pkgutil.iter_modules(package.__path__):
        attributes = vars(importlib.import_module(f"{package.__name__}.{module.name}"))
        found |= {v.name: v for v in attributes.values() if isinstance(v, Command)}
    rank = {name: i for i, name in enumerate(ORDER)}
    return tuple(sorted(found.values(), key=lambda c: (rank.get(c.name, len(ORDER)), c.name)))


def offered_in(view: str) -> tuple[Command, ...]:
    return tuple(c for c in builtins() if view in c.views)


def named(name: str) -> Command:
    return next(c for c in builtins() if c.name == name)


def builtin_names() -> set[str]:
    """Names and aliases a custom command cannot take."""
    return {n for c in builtins() for n in (c.name, *c.aliases)} | set(VIEW_NAMES)


@dataclass
class CustomArgs(NoArgs):
    arguments: str = rest("ARGUMENTS", "what $ARGUMENTS, $1, $2… become")


def custom(found: CustomCommand) -> Command:
    """A custom Markdown command (project/custom_commands.py): its body, filled in, is sent as a
    prompt, with its model if it names one."""

    async def run(call: Call, args: CustomArgs) -> None:
        text, model, note, expansion = fill_custom(
            call.engine, found, args.arguments, call.directory
        )
        if note is not None:
            await call.person.say(note)
        await call.person.send(text, model, expansion)

    return Command(
        found.name,
        found.help,
        run,
        CustomArgs,
        stream=True,
        starts=True,
        hint=found.hint,
    )


def fill_custom(
    engine: Engine, found: CustomCommand, arguments: str, directory: Path
) -> tuple[str, str | None, str | None, Expansion]:
    """A custom command's prompt (its body with the arguments put in), its model, a note
    when its model is not used (project/claude_agents.py's `alias_model`), and what
    `Engine.prompt` expands with it: its hooks, then its `!` lines. Its `allowed-tools`
    and `model` apply where its file is trusted (yours, or a trusted project's): a model
    chooses where the work is sent."""
    from agent_tui.config.claude_permissions import rules_of
    from agent_tui.config.hook_config import COMMAND_SOURCES
    from agent_tui.errors import UsageError
    from agent_tui.project.claude_agents import alias_model
    from agent_tui.session.expansion import Expansion

    text = found.expand(arguments)
    if not text:
        raise UsageError(f"/{found.name} is empty: {found.path} has no text.")
    project = engine.workspace(directory)
    trusted = found.scope == "user" or project.trusted
    expansion = Expansion(
        typed=f"/{found.name} {arguments}".rstrip(),
        name=found.name,
        arguments=arguments,
        source=COMMAND_SOURCES.get(found.scope, found.scope),
        allowed=rules_of(found.allowed, directory) if trusted else {},
    )
    if not trusted:
        return text, None, None, expansion
    model, note = alias_model(found.model, project.config.model)
    return text, model, f"/{found.name}: {note}." if note else None, expansion


def customs(directory: Path) -> tuple[tuple[Command, ...], str | None]:
    """The custom commands of `directory` (and the person's), and a warning about any
    named like a built-in (ignored)."""
    from agent_tui.project.custom_commands import load_custom_commands

    loaded = load_custom_commands(directory, builtin_names())
    return tuple(custom(c) for c in loaded.commands.values()), loaded.warning()


async def offered(view: str, directory: Path) -> tuple[Command, ...]:
    """What `view` offers in `directory`: the built-ins, then the custom commands."""
    found, _ = await asyncio.to_thread(customs, directory)
    return (*offered_in(view), *found)


def matching(prefix: str, commands: Iterable[Command]) -> list[Command]:
    """Commands whose name or an alias starts with `prefix` (without the slash)."""
    prefix = prefix.lower()
    return [c for c in commands if any(n.startswith(prefix) for n in (c.name, *c.aliases))]


def called(name: str, commands: Iterable[Command]) -> Command | None:
    """The command called exactly `name`, by name or alias."""
    return next((c for c in commands if name in (c.name, *c.aliases)), None)


def find(name: str, commands: Sequence[Command]) -> Command | None:
    """The command called `name`, by name or alias, else a unique prefix match."""
    name = name.lower()
    found = matching(name, commands)
    return called(name, commands) or (found[0] if len(found) == 1 else None)


def parse(text: str) -> tuple[str, str] | None:
    """('compact', 'keep the tests') for '/compact keep the tests'; None if not a command."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, _, args = stripped[1:].partition(" ")
    return name, args.strip()
