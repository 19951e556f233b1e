"""The slash commands of the prompt: a registry, shared with the command palette and /help."""

from __future__ import annotations

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

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (" [instructions]" if self.takes_args else "")


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
    SlashCommand("new", "Start a new session", "new_session", keybind="new_session"),
    SlashCommand("sessions", "Switch to another session", "sessions", keybind="sessions"),
    SlashCommand("model", "Choose the model for the next prompts", "choose_model", keybind="model"),
    SlashCommand("context", "Show what fills the context window", "context"),
    SlashCommand("export", "Write this session as JSON to a file here", "export"),
    SlashCommand("help", "List commands and keys", "help"),
    SlashCommand("quit", "Quit agent-tui", "quit", aliases=("exit",)),
)


def matching(prefix: str) -> list[SlashCommand]:
    """Commands whose name or an alias starts with `prefix` (without the slash)."""
    prefix = prefix.lower()
    return [c for c in COMMANDS if any(n.startswith(prefix) for n in (c.name, *c.aliases))]


def find(name: str) -> SlashCommand | None:
    """The command called `name`, by name or alias, else a unique prefix match."""
    name = name.lower()
    for command in COMMANDS:
        if name in (command.name, *command.aliases):
            return command
    found = matching(name)
    return found[0] if len(found) == 1 else None


def parse(text: str) -> tuple[str, str] | None:
    """('compact', 'keep the tests') for '/compact keep the tests'; None if not a command."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    name, _, args = stripped[1:].partition(" ")
    return name, args.strip()
