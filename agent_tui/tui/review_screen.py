"""A summary written for a manual /compact (`compaction.review`), before it is applied:
apply it as it is, edit it first, or discard it (the conversation stays as it was)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, TextArea

ReviewChoice = Literal["apply", "discard"]


@dataclass(frozen=True)
class ReviewAnswer:
    choice: ReviewChoice
    text: str = ""
    """With `apply`: the summary as the person left it (edited or not)."""


class ReviewScreen(ModalScreen[ReviewAnswer]):
    DEFAULT_CSS = """
    ReviewScreen { align: center middle; }
    ReviewScreen > #dialog {
        width: 90%; max-width: 120; height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    ReviewScreen #question { text-style: bold; color: $accent; }
    ReviewScreen #hint { color: $text-muted; }
    ReviewScreen #summary { height: 1fr; }
    ReviewScreen #buttons { height: auto; margin-top: 1; }
    ReviewScreen #buttons Button { margin-right: 1; min-width: 10; }
    """
    BINDINGS = [
        Binding("ctrl+s", "apply", "Apply", priority=True),
        Binding("escape", "back", "Discard"),
        Binding("e", "edit", "Edit"),
        Binding("d", "discard", "Discard"),
    ]

    def __init__(self, summary: str) -> None:
        super().__init__()
        self.summary = summary

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("This summary would replace the conversation so far.", id="question")
            yield Label(
                "Enter applies · e edits (Esc leaves the editor) · ctrl+s applies from anywhere "
                "· d or Esc discards",
                id="hint",
            )
            yield TextArea(self.summary, id="summary", soft_wrap=True)
            with Horizontal(id="buttons"):
                yield Button("Apply (Enter)", id="apply", variant="success")
                yield Button("Edit (e)", id="edit", variant="primary")
                yield Button("Discard (d)", id="discard", variant="error")

    def on_mount(self) -> None:
        self.query_one("#apply", Button).focus()

    @property
    def editor(self) -> TextArea:
        return self.query_one("#summary", TextArea)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        {"apply": self.action_apply, "edit": self.action_edit, "discard": self.action_discard}[
            event.button.id or "discard"
        ]()

    def action_apply(self) -> None:
        self.dismiss(ReviewAnswer("apply", self.editor.text))

    def action_edit(self) -> None:
        self.editor.focus()

    def action_discard(self) -> None:
        self.dismiss(ReviewAnswer("discard"))

    def action_back(self) -> None:
        """Esc: out of the editor first (the edit is kept), else discard."""
        if self.editor.has_focus:
            self.query_one("#apply", Button).focus()
        else:
            self.action_discard()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Typing e or d in the editor writes the letter.
        return not (action in ("edit", "discard") and self.editor.has_focus)
