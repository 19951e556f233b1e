"""The plan agent's plan, for the person to approve, keep planning on, or reject."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Button, Input, Markdown

from agent_tui.tui.dialog import Question

PlanChoice = Literal["approve", "keep", "reject"]


@dataclass(frozen=True)
class PlanAnswer:
    choice: PlanChoice
    note: str = ""
    """With `reject`: what the person wants changed."""


class PlanScreen(Question[PlanAnswer]):
    BINDINGS = [
        Binding("y", "answer('approve')", "Approve"),
        Binding("k,escape", "answer('keep')", "Keep planning"),
        Binding("r", "answer('reject')", "Reject with a note"),
    ]

    def __init__(self, plan: str) -> None:
        super().__init__(
            "The plan agent proposes this plan. Build it?",
            [
                ("approve", "Approve and build (y)", "success"),
                ("keep", "Keep planning (k)", "primary"),
                ("reject", "Reject with a note (r)", "error"),
            ],
        )
        self.plan = plan

    def body(self) -> ComposeResult:
        with VerticalScroll(id="plan-scroll"):
            yield Markdown(self.plan, id="plan")
        yield Input(placeholder="What should change? Enter sends, Esc goes back", id="note")

    def on_mount(self) -> None:
        self.query_one("#approve", Button).focus()  # Enter approves; Tab moves along

    def action_answer(self, choice: PlanChoice) -> None:  # type: ignore[override]
        note = self.query_one("#note", Input)
        if choice == "reject" and not self.has_class("-rejecting"):
            self.add_class("-rejecting")  # ask for the note first
            note.focus()
            return
        if choice == "keep" and self.has_class("-rejecting"):
            self.remove_class("-rejecting")  # Esc in the note: back to the choices
            return
        self.dismiss(PlanAnswer(choice, note.value.strip() if choice == "reject" else ""))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(PlanAnswer("reject", event.value.strip()))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # While the note is typed, letters are text, not choices (Esc still goes back).
        if action == "answer" and self.has_class("-rejecting") and parameters != ("keep",):
            return self.query_one("#note", Input).has_focus is False
        return True
