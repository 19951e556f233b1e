"""The slash commands of the prompt: a registry, shared with the command palette and /help."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SlashCommand:
    name: str
    help: str
    action: str
    """The app action that runs it (`action_<action>`)."""
    aliases: tuple[str, ...] = ()
    takes_args: bool = False
    keybind: str | None = None
    """The `keybinds` field of its leader key, if any."""
    arg_hint: str = "[instructions]"

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.arg_hint}" if self.takes_args else "")


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand(
        "compact",
        "Summarise the conversation now (extra instructions; --dry-run to preview)",
        "compact",
        aliases=("summarize",),
        takes_args=True,
        keybind="compact",
    ),
    SlashCommand(
        "uncompact",
        "Take back the newest compaction (the history before it returns)",
        "uncompact",
        keybind="uncompact",
    ),
    SlashCommand(
        "summary",
        "Read the summary in force (what was restated and kept) and correct it",
        "summary",
    ),
    SlashCommand(
        "undo",
        "Undo the newest turn: restore the files it changed, put its prompt back",
        "undo",
        keybind="undo",
    ),
    SlashCommand("redo", "Redo the turn undone last", "redo", keybind="redo"),
    SlashCommand(
        "pin",
        "Pin a message or tool result: restated verbatim after every compaction (a list "
        "opens; or an id)",
        "pin",
        takes_args=True,
        keybind="pin",
        arg_hint="[id]",
    ),
    SlashCommand(
        "unpin",
        "Unpin (a list of the pins opens; or an id)",
        "unpin",
        takes_args=True,
        arg_hint="[id]",
    ),
    SlashCommand("diff", "Show the files this session changed, as a diff", "diff"),
    SlashCommand("new", "Start a new session", "new_session", keybind="new_session"),
    SlashCommand("sessions", "Switch to another session", "sessions", keybind="sessions"),
    SlashCommand("model", "Choose the model for the next prompts", "choose_model", keybind="model"),
    SlashCommand("context", "Show what fills the context window", "context"),
    SlashCommand("mcp", "List the MCP servers, their state and their tools", "mcp"),
    SlashCommand("export", "Write this session as JSON to a file here", "export"),
    SlashCommand("help", "List commands and keys", "help"),
    SlashCommand("quit", "Quit agent-tui", "quit", aliases=("exit",)),
)


CUSTOM_ACTION = "custom_command"
"""The action of a custom command (custom_commands.py): its body is sent as a prompt."""


def builtin_names() -> set[str]:
    """Names and aliases a custom command cannot take."""
    return {n for c in COMMANDS for n in (c.name, *c.aliases)}


def custom(name: str, help: str) -> SlashCommand:
    return SlashCommand(name, help, CUSTOM_ACTION, takes_args=True, arg_hint="[arguments]")


def matching(prefix: str, extra: Sequence[SlashCommand] = ()) -> list[SlashCommand]:
    """Commands whose name or an alias starts with `prefix` (without the slash);
    `extra`: the custom commands."""
    prefix = prefix.lower()
    return [
        c for c in (*COMMANDS, *extra) if any(n.startswith(prefix) for n in (c.name, *c.aliases))
    ]


def find(name: str, extra: Sequence[SlashCommand] = ()) -> SlashCommand | None:
    """The command called `name`, by name or alias, else a unique prefix match."""
    name = name.lower()
    for command in (*COMMANDS, *extra):
        if name in (command.name, *command.aliases):
            return command
    found = matching(name, extra)
    return found[0] if len(found) == 1 else None


def parse(text: str) -> tuple[str, str] | None:
    """('compact', 'keep the tests') for '/compact keep the tests'; None if not a command."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, _, args = stripped[1:].partition(" ")
    return name, args.strip()
