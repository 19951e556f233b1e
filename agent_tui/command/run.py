"""Running a built-in command against the engine: one handler per command of the table,
each returning the engine's own result, whose `message()` every view shows (ACP says it
as agent text, the CLI prints it, the app notifies it or draws the result its own way)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar, Protocol

from agent_tui.command.table import FORCE, LIST, NO_DIFF, UP_TO, compact_args
from agent_tui.errors import UsageError
from agent_tui.session.engine import Engine
from agent_tui.session.loop import LoopResult


class Result(Protocol):
    def message(self) -> str: ...


@dataclass
class Text:
    """A result that is only text (a sentence: `/fork`'s)."""

    text: str

    def message(self) -> str:
        return self.text


class Document(Text):
    """A report laid out in columns and indents (`/context`): shown as it is."""

    laid_out: ClassVar[bool] = True


def as_markdown(result: Result) -> str:
    """What a Markdown view (an editor over ACP) shows: a laid-out report in a fenced
    block, so its indents and single newlines are not joined into one paragraph; the
    rest (sentences, the diff's own fence) as it is. Laid out: `laid_out` on its class
    (Document, CompactionPlan, SummaryInForce)."""
    text = result.message()
    if not text or not getattr(result, "laid_out", False):
        return text
    fence = "````" if "```" in text else "```"
    return f"{fence}text\n{text}\n{fence}"


@dataclass
class SessionDiff:
    diff: str

    def message(self) -> str:
        return f"```diff\n{self.diff}\n```" if self.diff else NO_DIFF


@dataclass
class Compacted:
    """A compaction shows itself through the engine's events: nothing more to say."""

    result: LoopResult | None

    def message(self) -> str:
        return ""


Handler = Callable[[Engine, str, str, "str | None"], Awaitable[Result]]


async def _compact(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    typed = compact_args(args)
    if typed.up_to == "":
        raise UsageError(f"{UP_TO} needs the id of the message the summary ends with.")
    if typed.dry_run:
        return await engine.compaction_plan(
            session_id, typed.instructions, model=model, up_to=typed.up_to
        )
    return Compacted(
        await engine.compact(session_id, typed.instructions, model=model, up_to=typed.up_to)
    )


async def _uncompact(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    return await engine.uncompact(session_id, model=model)


async def _summary(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    return await engine.summary(session_id, model=model)


async def _undo(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    return await engine.undo(session_id, force=args == FORCE)


async def _redo(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    return await engine.redo(session_id, force=args == FORCE)


async def _pin(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    if args == LIST:
        return await engine.pin_list(session_id)
    return await engine.pin(session_id, args or None)


async def _unpin(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    return await engine.unpin(session_id, args or None)


async def _diff(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    return SessionDiff(await engine.session_diff(session_id))


async def _fork(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    forked = await engine.fork(session_id, args or None)
    said = f"Forked into a new session, {forked.session.id}; the original is untouched."
    if forked.retype is not None:  # before the person's own message: its words back
        said += f" It ends before your message, which was not copied:\n\n{forked.retype}"
    return Text(said)


async def _context(engine: Engine, session_id: str, args: str, model: str | None) -> Result:
    return Document(await engine.context_report(session_id, model=model))


HANDLERS: dict[str, Handler] = {
    "compact": _compact,
    "uncompact": _uncompact,
    "summary": _summary,
    "undo": _undo,
    "redo": _redo,
    "pin": _pin,
    "unpin": _unpin,
    "diff": _diff,
    "fork": _fork,
    "context": _context,
}
"""The commands a view can run as text (ACP's `/command` prompts, the CLI's subcommands):
the others of the table open the app's own screens."""


async def execute(
    engine: Engine, session_id: str, name: str, args: str = "", *, model: str | None = None
) -> Result:
    """Run command `name` with `args` as typed after it. Errors a person can cause
    (AgentTuiError) propagate, for the view to show."""
    return await HANDLERS[name](engine, session_id, args.strip(), model)
