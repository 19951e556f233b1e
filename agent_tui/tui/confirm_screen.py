"""Asks the person a yes/no question, e.g. whether /undo may overwrite files they changed."""

from __future__ import annotations

from textual.binding import Binding

from agent_tui.tui.dialog import Answer, Question


class ConfirmScreen(Question[bool]):
    BINDINGS = [
        Binding("y", "answer('yes')", "Yes"),
        Binding("n,escape", "answer('no')", "No"),
    ]

    def __init__(self, question: str, detail: str, yes: str = "Yes") -> None:
        answers: list[Answer] = [("yes", f"{yes} (y)", "warning"), ("no", "Cancel (n)", "primary")]
        super().__init__(question, answers, detail)

    def action_answer(self, choice: str) -> None:
        self.dismiss(choice == "yes")
