"""A modal with read-only text: /help and /context."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from agent_tui.tui.dialog import Dialog


class TextScreen(Dialog[str | None]):
    """Closed with None; a subclass may answer otherwise (`SummaryScreen`)."""

    BINDINGS = [Binding("escape,q,enter", "dismiss", "Close")]

    def __init__(self, title: str, text: str, hint: str = "Esc closes") -> None:
        super().__init__()
        self.heading = title
        self.text = text
        self.hint = hint

    def content(self) -> ComposeResult:
        yield Label(self.heading, id="heading")
        with VerticalScroll(id="body"):
            yield Static(self.text, markup=False)
        yield Label(self.hint, classes="hint")
