"""A summary written for a manual /compact (`compaction.review`), before it is applied:
apply it as it is, edit it first, or discard it (the conversation stays as it was)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Button, Label, TextArea

from agent_tui.tui.dialog import Question

ReviewChoice = Literal["apply", "discard"]


@dataclass(frozen=True)
class ReviewAnswer:
    choice: ReviewChoice
    text: str = ""
    """With `apply`: the summary as the person left it (edited or not)."""


class ReviewScreen(Question[ReviewAnswer]):
    BINDINGS = [
        Binding("ctrl+s", "apply", "Apply", priority=True),
        Binding("escape", "back", "Discard"),
        Binding("e", "edit", "Edit"),
        Binding("d", "discard", "Discard"),
    ]

    def __init__(self, summary: str) -> None:
        super().__init__(
            "This summary would replace the conversation so far.",
            [
                ("apply", "Apply (Enter)", "success"),
                ("edit", "Edit (e)", "primary"),
                ("discard", "Discard (d)", "error"),
            ],
        )
        self.summary = summary

    def body(self) -> ComposeResult:
        yield Label(
            "Enter applies · e edits (Esc leaves the editor) · ctrl+s applies from anywhere "
            "· d or Esc discards",
            classes="hint",
        )
        yield TextArea(self.summary, id="summary", soft_wrap=True)

    def on_mount(self) -> None:
        self.query_one("#apply", Button).focus()

    @property
    def editor(self) -> TextArea:
        return self.query_one("#summary", TextArea)

    def action_answer(self, choice: str) -> None:
        getattr(self, f"action_{choice}")()  # a button: apply, edit or discard

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
