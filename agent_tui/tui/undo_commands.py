"""/undo, /redo and /diff in the app (mixed into AgentApp beside AppCommands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_tui.command.table import FORCE
from agent_tui.errors import AgentTuiError
from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.text_screen import TextScreen

if TYPE_CHECKING:
    from agent_tui.tui.app import AgentApp


class UndoCommands:
    """Undo and redo of turns; `self` is the AgentApp."""

    _undo_prompt: str | None = None
    """The prompt /undo last put in the input (replaced, not stacked, by the next undo)."""

    def action_undo(self: AgentApp, args: str | None = None) -> None:
        force = (args or "").strip() == FORCE
        self.run_worker(self.turn_back(undo=True, force=force), exit_on_error=False)

    def action_redo(self: AgentApp, args: str | None = None) -> None:
        force = (args or "").strip() == FORCE
        self.run_worker(self.turn_back(undo=False, force=force), exit_on_error=False)

    async def turn_back(self: AgentApp, *, undo: bool, force: bool = False) -> None:
        """Undo (or redo) a turn; files the person changed since are overwritten only
        after they confirm."""
        if self.session is None:
            self.notify(f"Nothing to {'undo' if undo else 'redo'} yet.", severity="warning")
            return
        from agent_tui.session.undo import UndoConflict

        act = self.engine.undo if undo else self.engine.redo
        try:
            done = await act(self.session.id, force=force)
        except UndoConflict as exc:

            def answered(yes: bool | None) -> None:
                if yes:
                    self.run_worker(self.turn_back(undo=undo, force=True), exit_on_error=False)

            question = f"{'Undo' if undo else 'Redo'} and overwrite your changes?"
            self.push_screen(ConfirmScreen(question, str(exc), "Overwrite"), answered)
            return
        except AgentTuiError as exc:
            self.notify(str(exc), severity="error", timeout=10)
            return
        await self.show_session(await self.db.get_session(self.session.id))
        self._put_back(done.prompt if undo else None)
        self.notify(done.message())

    def _put_back(self: AgentApp, prompt: str | None) -> None:
        """Undo: the turn's prompt in the input (what the person typed is kept); redo:
        the prompt an undo put there goes away again."""
        current = self.prompt.text
        if current.strip() and current != self._undo_prompt:
            if prompt:
                self._restore(prompt)
            self._undo_prompt = None
            return
        self.prompt.load_text(prompt or "")
        self.prompt.move_cursor(self.prompt.document.end)
        self._undo_prompt = prompt

    async def refresh_changes(self: AgentApp) -> None:
        """The sidebar's files with +/- line counts, from the session's snapshots."""
        if self.session is None:
            return
        self.stats.changes = await self.engine.session_numstat(self.session.id)
        self._refresh_sidebar()

    def action_diff(self: AgentApp) -> None:
        async def show() -> None:
            if self.session is None:
                self.notify("No changes yet: send a message first.")
                return
            text = await self.engine.session_diff(self.session.id)
            self.push_screen(TextScreen("Session diff", text or "No file changed yet."))

        self._guard(show)
