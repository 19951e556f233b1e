"""/undo, /redo and /diff in the app (tui/commands.py's table of actions)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_tui.command.table import FORCE, NO_DIFF
from agent_tui.errors import AgentTuiError
from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.text_screen import TextScreen

if TYPE_CHECKING:
    from agent_tui.tui.conversation import Conversation


def undo(chat: Conversation, args: str) -> None:
    chat.run_worker(turn_back(chat, undo=True, force=args.strip() == FORCE), exit_on_error=False)


def redo(chat: Conversation, args: str) -> None:
    chat.run_worker(turn_back(chat, undo=False, force=args.strip() == FORCE), exit_on_error=False)


async def turn_back(chat: Conversation, *, undo: bool, force: bool = False) -> None:
    """Undo (or redo) a turn; files the person changed since are overwritten only after
    they confirm."""
    if chat.session is None:
        chat.notify(f"Nothing to {'undo' if undo else 'redo'} yet.", severity="warning")
        return
    from agent_tui.session.undo import UndoConflict

    act = chat.engine.undo if undo else chat.engine.redo
    try:
        done = await act(chat.session.id, force=force)
    except UndoConflict as exc:

        def answered(yes: bool | None) -> None:
            if yes:
                chat.run_worker(turn_back(chat, undo=undo, force=True), exit_on_error=False)

        question = f"{'Undo' if undo else 'Redo'} and overwrite your changes?"
        chat.app.push_screen(ConfirmScreen(question, str(exc), "Overwrite"), answered)
        return
    except AgentTuiError as exc:
        chat.notify(str(exc), severity="error", timeout=10)
        return
    await chat.reopen()
    chat.put_back(done.prompt if undo else None)
    chat.notify(done.message())


def diff(chat: Conversation, _: str) -> None:
    async def show() -> None:
        if chat.session is None:
            chat.notify(f"{NO_DIFF} Send a message first.")
            return
        text = await chat.engine.session_diff(chat.session.id)
        chat.app.push_screen(TextScreen("Session diff", text or NO_DIFF))

    chat.guard(show)
