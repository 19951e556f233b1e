"""A command is one object (DESIGN.md): its name, help, aliases and views; a typed
argument model (a dataclass whose fields say how each is typed: a flag, an option, a
word, the words left) from which both the CLI's subcommand (cli/parser.py) and the slash
parsing (`parse_args`) are made; and one `run` against the engine that talks to the
person only through the view's `Person` and returns what it did. Import-light (the app's
first frame and the CLI's --help read it): a command's run imports the engine's parts."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol

from agent_tui.errors import UsageError

if TYPE_CHECKING:
    from agent_tui.records import Session
    from agent_tui.scope import SessionScope
    from agent_tui.session.engine import Engine
    from agent_tui.session.expansion import Expansion
    from agent_tui.workspace.workspace import Workspace

APP, ACP, CLI = "app", "acp", "cli"
"""The views: the app's slash commands and palette, ACP's `/command` prompts and
`available_commands_update`, the CLI's subcommands."""
EVERY_VIEW = frozenset({APP, ACP, CLI})

NO_SESSION = "Nothing here yet: send a message first."


class Result(Protocol):
    def message(self) -> str: ...


@dataclass
class Text:
    """A sentence (`/fork`'s)."""

    text: str

    def message(self) -> str:
        return self.text


@dataclass
class Document(Text):
    """A report laid out in columns and indents (`/context`): shown as it is."""

    title: str = ""
    laid_out: ClassVar[bool] = True


@dataclass
class Row:
    """One of the rows a person chooses from: its id, what is shown, a second line."""

    id: str
    label: str
    detail: str = ""
    current: bool = False
    depth: int = 0
    data: Any = None
    """What the view may draw more of (a session's usage, a pin's tokens)."""

    @property
    def first_line(self) -> str:
        """The label's first line: what a list shows of it."""
        return self.label.strip().partition("\n")[0]


@dataclass
class Rows:
    """Rows to choose from, as a result: a view that cannot choose lists them."""

    laid_out: ClassVar[bool] = True

    title: str
    rows: list[Row]
    empty: str
    """Said when there is no row."""
    kind: str = "list"
    """What the rows are (sessions, messages, pins, models): the app's screen for them."""

    def message(self) -> str:
        lines = [f"{'  ' * r.depth}{r.id}  {r.first_line}  {r.detail}".rstrip() for r in self.rows]
        return "\n".join(lines) or self.empty


class Person(Protocol):
    """The ways a command talks to a person, written once per view: screens in the app,
    print/stdin in the CLI, messages and permission questions in ACP."""

    view: str
    asks: bool
    """It can ask the person to choose (the app); else `choose` lists the rows."""

    async def say(self, text: str) -> None: ...

    async def show(self, title: str, result: Result) -> None:
        """A report, shown whole (`laid_out`, or the diff)."""

    async def confirm(self, question: str, detail: str, yes: str, flag: str) -> bool:
        """`yes`: the button's word; `flag`: the option that answers yes beforehand."""

    async def choose(self, rows: Rows) -> str | None:
        """The id of the row chosen; None: none (a view that cannot ask lists them)."""

    async def open_session(self, session: Session | None, retype: str | None) -> None:
        """Go to a session (None: a new one); `retype`: words to put back in the input."""

    async def edit(self, title: str, text: str, original: str) -> str | None:
        """The text as the person edited it (`original`: what it was first, or "review":
        a summary not yet applied); None: cancelled, or no editor here."""

    async def retype(self, text: str | None) -> None:
        """Words the person may send again (an undone turn's prompt; None: an undo's
        words go away again, on redo)."""

    async def send(self, text: str, model: str | None, expansion: Expansion) -> None:
        """Send a custom command's body to the session (`expansion`: the command as
        typed, which the engine expands: its hooks, then its `!` lines)."""

    async def use_model(self, model: str) -> None:
        """The model of the next prompts."""

    async def leave(self) -> None: ...


@dataclass
class Call:
    """One run of a command: the engine, the view's person, where and for which session
    (`scope`: that session and its project, which the command hands to the mechanism)."""

    opened: Engine | None
    """None for a command that needs no engine (`Command.engine`)."""
    person: Person
    directory: Path
    session_id: str | None
    model: str | None = None

    @property
    def engine(self) -> Engine:
        assert self.opened is not None, "a command that needs the engine"
        return self.opened

    def session(self) -> str:
        if self.session_id is None:
            raise UsageError(NO_SESSION)
        return self.session_id

    async def scope(self) -> SessionScope:
        """The session it acts on and its project, for the mechanism to act on."""
        return await self.engine.scope(self.session())

    @property
    def workspace(self) -> Workspace:
        """The project of the directory it runs in (its config, trust, MCP servers)."""
        return self.engine.workspace(self.directory)


ArgKind = Literal["flag", "option", "word", "rest"]


def _arg(kind: ArgKind, help: str, metavar: str = "", default: Any = None, short: str = "") -> Any:
    metadata = {"kind": kind, "help": help, "metavar": metavar, "short": short}
    return field(default=default, metadata=metadata)


def flag(help: str) -> Any:
    """`--name`: True when given."""
    return _arg("flag", help, default=False)


def option(metavar: str, help: str, short: str = "") -> Any:
    """`--name VALUE` (`/compact --up-to` with no value: ""); `short`: also `-X VALUE`."""
    return _arg("option", help, metavar, short=short)


def word(metavar: str, help: str) -> Any:
    """One word, in the order of the fields."""
    return _arg("word", help, metavar)


def rest(metavar: str, help: str) -> Any:
    """Every word left, as typed."""
    return _arg("rest", help, metavar, default="")


@dataclass
class NoArgs:
    exclusive: ClassVar[tuple[tuple[str, ...], ...]] = ()


@dataclass(frozen=True)
class Arg:
    name: str
    kind: ArgKind
    help: str
    metavar: str
    short: str = ""
    """A one-letter spelling of an option (`/new -w`), without its dash."""

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def label(self) -> str:
        """How a person names it: `--name` for a flag or option, its metavar for words."""
        return self.option if self.kind in ("flag", "option") else self.metavar


def args_of(model: type) -> list[Arg]:
    return [Arg(f.name, **f.metadata) for f in dataclasses.fields(model)]


Runner = Callable[["Call", Any], Awaitable["Result | None"]]


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Runner
    args: type = NoArgs
    aliases: tuple[str, ...] = ()
    views: frozenset[str] = EVERY_VIEW
    keybind: str | None = None
    """The `keybinds` field of its leader key in the app, if any."""
    session: bool = True
    """It acts on a session: the CLI takes -c / -s ID for it."""
    session_optional: bool = False
    """With no session in the directory (and no -c / -s), it runs with none (`context`
    before a first message) instead of saying there is none to continue."""
    model: bool = False
    """It may call the model: the CLI takes -m for it."""
    description: str = ""
    """The CLI's longer --help text."""
    stream: bool = False
    """The CLI prints the model's text as it streams (a summary)."""
    engine: bool = True
    """It needs the engine (the CLI opens none for `engine`)."""
    starts: bool = False
    """It sends a prompt: the CLI starts a session unless -c or -s names one."""
    hint: str | None = None
    """What to type after the name, as a custom command's file says (`argument-hint`)."""

    @property
    def usage(self) -> str:
        hint = self.hint or " ".join(_hint(arg) for arg in args_of(self.args))
        return f"/{self.name}" + (f" {hint}" if hint else "")

    @property
    def arg_hint(self) -> str | None:
        return self.usage.partition(" ")[2] or None

    def parse(self, typed: str) -> Any:
        """The arguments as typed after `/name`: options first, then the words."""
        return build(self, parse_words(self, typed))


def _hint(arg: Arg) -> str:
    return f"[{arg.option} {arg.metavar}]" if arg.kind == "option" else f"[{arg.label}]"


def parse_words(command: Command, typed: str) -> dict[str, Any]:
    args = {a.option: a for a in args_of(command.args) if a.kind in ("flag", "option")}
    args.update({f"-{a.short}": a for a in args.values() if a.short})
    words = [a for a in args_of(command.args) if a.kind in ("word", "rest")]
    values: dict[str, Any] = {}
    left = typed.strip()
    while left:
        first, _, after = left.partition(" ")
        arg = args.get(first)
        if arg is not None and arg.kind == "flag":
            values[arg.name], left = True, after.strip()
        elif arg is not None:
            values[arg.name], _, left = after.strip().partition(" ")
            left = left.strip()
        elif words and (words[0].kind == "rest" or not first.startswith("--")):
            arg = words.pop(0)
            values[arg.name], left = (left, "") if arg.kind == "rest" else (first, after.strip())
        else:
            raise UsageError(f"/{command.name} does not take {first!r}. Usage: {command.usage}")
    return values


def build(command: Command, values: dict[str, Any]) -> Any:
    """The argument model of `command` from `values`, its exclusive options checked."""
    for group in command.args.exclusive:
        given = [a for a in args_of(command.args) if a.name in group and values.get(a.name)]
        if len(given) > 1:
            names = " and ".join(a.label for a in given)
            raise UsageError(f"{command.name}: {names} cannot be given together.")
    return command.args(**{k: v for k, v in values.items() if v is not None})


async def present(person: Person, command: Command, result: Result | None) -> None:
    """What a command gives, as its view shows it: a report whole, a sentence said."""
    if result is None or not (text := result.message()):
        return
    title = getattr(result, "title", "")
    if getattr(result, "laid_out", False) or title:
        await person.show(title or command.name.capitalize(), result)
    else:
        await person.say(text)
