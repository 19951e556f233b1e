"""/bashes (Claude Code's name): the session's background commands — command, how long it
has run or how it ended, its last line — and stopping one (chosen in the app, or named
by its id), which the model is told at its next step (tool/background.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_tui.command.core import (
    ACP,
    APP,
    Call,
    Command,
    NoArgs,
    Result,
    Row,
    Rows,
    Text,
    flag,
    word,
)
from agent_tui.ids import now_ms
from agent_tui.tool.background_lines import ending, shorten, state

if TYPE_CHECKING:
    from agent_tui.events import BackgroundCommand

EMPTY = "No background commands in this session."
LABEL_CHARS = 60
"""A command is cut to this many characters in the list."""


@dataclass
class BashesArgs(NoArgs):
    id: str | None = word("ID", "the background command to stop (default: choose one)")
    yes: bool = flag("stop it without asking")


async def _bashes(call: Call, args: BashesArgs) -> Result | None:
    if call.session_id is None:
        return Text(EMPTY)
    scope = await call.scope()
    commands = scope.background.list()
    chosen = args.id
    if chosen is None:
        if not commands:
            return Text(EMPTY)
        listed = Rows("Background commands", [row(c, now_ms()) for c in commands], EMPTY, "bashes")
        chosen = await call.person.choose(listed)
        if chosen is None:
            return None
    return await _stop(call, commands, chosen.strip(), args.yes)


def row(info: BackgroundCommand, now: int) -> Row:
    """One command as the list shows it: its command; its state and last line."""
    detail = state(info, now)
    if info.last_line.strip():
        detail += f" · {shorten(info.last_line, LABEL_CHARS)}"
    label = shorten(info.command, LABEL_CHARS)
    return Row(info.id, label, detail, current=info.status == "running", data=info)


async def _stop(call: Call, commands: list[BackgroundCommand], chosen: str, yes: bool) -> Result:
    found = next((c for c in commands if c.id == chosen), None)
    if found is None:
        known = ", ".join(c.id for c in commands) or "none"
        return Text(f"No background command has the id {chosen!r} (background commands: {known}).")
    if found.status != "running":
        return Text(f"{found.id} is not running ({ending(found)}): there is nothing to stop.")
    question = f"Stop background command {found.id}?"
    detail = f"{found.command}\n{state(found, now_ms())}"
    if not (yes or await call.person.confirm(question, detail, "Stop", "--yes")):
        return Text(f"{found.id} goes on running.")
    stopped = await (await call.scope()).background.stop(found.id)
    return Text(f"Stopped background command {found.id}: {shorten(stopped.info.command, 80)}")


BASHES = Command(
    "bashes",
    "List the session's background commands and stop one (an id, or choose)",
    _bashes,
    BashesArgs,
    views=frozenset({APP, ACP}),
    description="The commands the model left running in the background in this session "
    "(bash run_in_background, or sent there with Ctrl+B): command, running time or how it "
    "ended, last line. Choosing a running one (or naming its id) stops it after you confirm; "
    "the model is told at its next step.",
)
