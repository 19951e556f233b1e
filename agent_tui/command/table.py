"""The one table of commands. Import-light (dataclasses only): the CLI's `--help` and the
app's first frame read it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

NO_DIFF = "No file changed yet."
"""What every view says of an empty session diff."""

APP, ACP, CLI = "app", "acp", "cli"
"""The views that offer commands: the app's slash commands and palette, ACP's
`available_commands_update` and `/command` prompts, the CLI's subcommands."""

DRY_RUN = "--dry-run"
UP_TO = "--up-to"
FORCE = "--force"
LIST = "--list"


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    """The description every view shows (palette, /help, CLI --help, ACP)."""
    action: str = ""
    """The app action that runs it (`action_<action>`); default: its name."""
    aliases: tuple[str, ...] = ()
    arg_hint: str | None = None
    """Its arguments as a person types them; None: it takes none."""
    views: frozenset[str] = frozenset({APP, ACP, CLI})
    keybind: str | None = None
    """The `keybinds` field of its leader key in the app, if any."""

    @property
    def usage(self) -> str:
        return f"/{self.name}" + (f" {self.arg_hint}" if self.arg_hint else "")

    def app_action(self) -> str:
        return self.action or self.name


def _only(*views: str) -> frozenset[str]:
    return frozenset(views)


COMMANDS: tuple[Command, ...] = (
    Command(
        "compact",
        "Summarise the conversation now (extra instructions; --dry-run to preview)",
        aliases=("summarize",),
        arg_hint=f"[{UP_TO} ID] [{DRY_RUN}] [instructions]",
        keybind="compact",
    ),
    Command(
        "uncompact",
        "Take back the newest compaction (the history before it returns)",
        keybind="uncompact",
    ),
    Command(
        "summary",
        "Show the summary in force: what was restated after it and what was kept",
    ),
    Command(
        "undo",
        "Undo the newest turn: restore the files it changed, hide it from the model "
        "(--force overwrites your changes since)",
        arg_hint=f"[{FORCE}]",
        keybind="undo",
    ),
    Command(
        "redo",
        "Redo the turn undone last (--force overwrites your changes since)",
        arg_hint=f"[{FORCE}]",
        keybind="redo",
    ),
    Command(
        "pin",
        "Pin a message or tool result: restated verbatim after every compaction (an id; "
        "--list: the pins)",
        arg_hint=f"[id | {LIST}]",
        keybind="pin",
    ),
    Command(
        "unpin",
        "Unpin a message or tool result (an id)",
        arg_hint="[id]",
        views=_only(APP, ACP),
    ),
    Command("diff", "Show the files this session changed, as a diff", views=_only(APP, ACP)),
    Command("context", "Show what fills the context window"),
    Command(
        "sessions",
        "List the sessions (the app switches to the one chosen)",
        keybind="sessions",
        views=_only(APP, CLI),
    ),
    Command(
        "fork",
        "Fork the session: a new one with its history up to a message (an id; default: all "
        "of it), the original untouched",
        arg_hint="[MSG_ID]",
    ),
    Command(
        "new",
        "Start a new session",
        action="new_session",
        keybind="new_session",
        views=_only(APP),
    ),
    Command(
        "model",
        "Choose the model for the next prompts",
        action="choose_model",
        keybind="model",
        views=_only(APP),
    ),
    Command("mcp", "List the MCP servers, their state and their tools", views=_only(APP)),
    Command(
        "export",
        "Export a session as JSON (the app writes a file here; the CLI prints it)",
        views=_only(APP, CLI),
    ),
    Command(
        "trust",
        "Trust this project: its whole config applies (--list: the trusted projects; "
        "--revoke: forget one)",
        arg_hint="[DIR] [--list | --revoke]",
        views=_only(APP, CLI),
    ),
    Command(
        "engine",
        "Show your warm engines (pid, idle time, memory, commands connected); --stop ends them",
        arg_hint="[--stop]",
        views=_only(CLI),
    ),
    Command("help", "List commands and keys", views=_only(APP)),
    Command("quit", "Quit agent-tui", aliases=("exit",), views=_only(APP)),
)

CUSTOM_ACTION = "custom_command"
"""The app action of a custom command (custom_commands.py): its body is sent as a prompt."""


def offered_in(view: str) -> tuple[Command, ...]:
    return tuple(c for c in COMMANDS if view in c.views)


def named(name: str) -> Command:
    return next(c for c in COMMANDS if c.name == name)


def builtin_names() -> set[str]:
    """Names and aliases a custom command cannot take."""
    return {n for c in COMMANDS for n in (c.name, *c.aliases)}


def custom(name: str, help: str) -> Command:
    """A custom Markdown command, offered where the built-ins are (the CLI runs it as
    `agent-tui run "/NAME args"`)."""
    return Command(name, help, CUSTOM_ACTION, arg_hint="[arguments]", views=_only(APP, ACP))


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


@dataclass(frozen=True)
class CompactArgs:
    instructions: str | None
    dry_run: bool = False
    up_to: str | None = None
    """Compact up to here: the id of the message the summary ends with."""


def compact_args(args: str) -> CompactArgs:
    """`/compact`'s arguments as typed: `--dry-run` and `--up-to ID` first, in any order,
    then the instructions (`--up-to msg_1 keep the test names`)."""
    rest, dry_run, up_to = args.strip(), False, None
    while True:
        word, _, after = rest.partition(" ")
        if word == DRY_RUN:
            dry_run, rest = True, after.strip()
        elif word == UP_TO:  # with no id: "" (the app lets the person choose)
            up_to, _, rest = after.strip().partition(" ")
            rest = rest.strip()
        else:
            return CompactArgs(rest or None, dry_run, up_to)
