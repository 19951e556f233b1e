"""`/summary`: the summary in force, what was restated after it and what was kept."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static

from agent_tui.context.summary_view import SummaryInForce, render_summary

EDIT = "edit"


class SummaryScreen(ModalScreen[str | None]):
    """Dismissed with `EDIT` when the person asks to correct the summary, else None."""

    CSS_PATH = "summary_screen.tcss"
    BINDINGS = [
        Binding("e", "edit", "Edit"),
        Binding("escape,q,enter", "dismiss", "Close"),
    ]

    def __init__(self, view: SummaryInForce) -> None:
        super().__init__()
        self.view = view
        self.text = render_summary(view)

    def compose(self) -> ComposeResult:
        title = "Summary" + (" (edited by you)" if self.view.edited else "")
        with Vertical(id="box"):
            yield Label(title, id="heading")
            with VerticalScroll(id="body"):
                yield Static(self.text, markup=False, id="summary-text")
            hint = "e edits the summary · Esc closes" if self.view.compacted else "Esc closes"
            yield Label(hint, id="close-hint")

    def action_edit(self) -> None:
        if self.view.compacted:
            self.dismiss(EDIT)
