"""Correcting the summary in force: its text in a TextArea; save, cancel, or go back to
what the summariser wrote."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Label, TextArea

from agent_tui.context.summary_view import CACHE_NOTE
from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.dialog import Dialog


class SummaryEditScreen(Dialog[str | None]):
    """Dismissed with the text to save, or None when cancelled."""

    BINDINGS = [
        Binding("ctrl+s", "save", "Save", priority=True),
        Binding("escape", "cancel", "Cancel", priority=True),
        Binding("ctrl+r", "original", "The summariser's text", priority=True),
    ]

    def __init__(self, text: str, original: str) -> None:
        super().__init__()
        self.initial = text
        self.original = original

    def content(self) -> ComposeResult:
        yield Label("Edit the summary the model sees", id="heading")
        yield TextArea(self.initial, soft_wrap=True, id="summary-editor")
        yield Label(CACHE_NOTE, id="cache-note", classes="hint")
        yield Label("Ctrl+S save · Esc cancel · Ctrl+R the summariser's own text", classes="hint")

    @property
    def editor(self) -> TextArea:
        return self.query_one("#summary-editor", TextArea)

    def on_mount(self) -> None:
        self.editor.focus()
        self.editor.move_cursor(self.editor.document.end)  # corrections are often added

    def action_save(self) -> None:
        self.dismiss(self.editor.text)

    def action_original(self) -> None:
        self.editor.load_text(self.original)

    def action_cancel(self) -> None:
        if self.editor.text == self.initial:
            self.dismiss(None)
            return

        def answered(discard: bool | None) -> None:
            if discard:
                self.dismiss(None)

        detail = "The summary stays as it was."
        confirm = ConfirmScreen("Discard your changes to the summary?", detail, "Discard")
        self.app.push_screen(confirm, answered)
