"""/undo, /redo and /diff: take back the newest turn (its files restored, hidden from the
model), bring it back, show what the session changed."""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from agent_tui.command.core import Call, Command, NoArgs, Result, flag

NO_DIFF = "No file changed yet."
"""What every view says of an empty session diff."""


@dataclass
class SessionDiff:
    diff: str
    title = "Session diff"

    def message(self) -> str:
        return f"```diff\n{self.diff}\n```" if self.diff else NO_DIFF


@dataclass
class TurnArgs(NoArgs):
    force: bool = flag("overwrite files you changed since the turn (else you are asked)")


async def _turn(call: Call, args: TurnArgs, *, undo: bool) -> Result:
    """Files the person changed since are overwritten only after they confirm."""
    from agent_tui.session import undo as turns

    scope, act = await call.scope(), turns.undo if undo else turns.redo
    try:
        done = await act(scope, force=args.force)
    except turns.UndoConflict as exc:
        verb = "Undo" if undo else "Redo"
        if not await call.person.confirm(
            f"{verb} and overwrite your changes?", str(exc), "Overwrite", "--force"
        ):
            raise
        done = await act(scope, force=True)
    await call.person.retype(done.prompt if undo else None)
    return done


async def _diff(call: Call, args: NoArgs) -> Result:
    from agent_tui.session.undo import diff

    return SessionDiff(await diff(await call.scope()))


UNDO = Command(
    "undo",
    "Undo the newest turn: restore the files it changed, hide it from the model "
    "(--force overwrites your changes since)",
    partial(_turn, undo=True),
    TurnArgs,
    keybind="undo",
)
REDO = Command(
    "redo",
    "Redo the turn undone last (--force overwrites your changes since)",
    partial(_turn, undo=False),
    TurnArgs,
    keybind="redo",
)
DIFF = Command("diff", "Show the files this session changed, as a diff", _diff)
