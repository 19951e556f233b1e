"""Asks the person a yes/no question, e.g. whether /undo may overwrite files they changed."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from agent_tui.tui.dialog import Question


class ConfirmScreen(Question[bool]):
    BINDINGS = [
        Binding("y", "answer('yes')", "Yes"),
        Binding("n,escape", "answer('no')", "No"),
    ]

    def __init__(self, question: str, detail: str, yes: str = "Yes") -> None:
        super().__init__(
            question, [("yes", f"{yes} (y)", "warning"), ("no", "Cancel (n)", "primary")]
        )
        self.detail = detail

    def body(self) -> ComposeResult:
        yield Static(self.detail, markup=False, id="detail")

    def action_answer(self, choice: str) -> None:
        self.dismiss(choice == "yes")
