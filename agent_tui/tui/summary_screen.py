"""`/summary`: the summary in force, what was restated after it and what was kept."""

from __future__ import annotations

from textual.binding import Binding

from agent_tui.context.summary_view import SummaryInForce, render_summary
from agent_tui.tui.text_screen import TextScreen

EDIT = "edit"


class SummaryScreen(TextScreen):
    """Dismissed with `EDIT` when the person asks to correct the summary, else None."""

    BINDINGS = [Binding("e", "edit", "Edit")]

    def __init__(self, view: SummaryInForce) -> None:
        title = "Summary" + (" (edited by you)" if view.edited else "")
        hint = "e edits the summary · Esc closes" if view.compacted else "Esc closes"
        super().__init__(title, render_summary(view), hint)
        self.view = view

    def action_edit(self) -> None:
        if self.view.compacted:
            self.dismiss(EDIT)
