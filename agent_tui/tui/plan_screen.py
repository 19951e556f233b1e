"""The plan agent's plan, for the person to approve, keep planning on, or reject."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Markdown

PlanChoice = Literal["approve", "keep", "reject"]


@dataclass(frozen=True)
class PlanAnswer:
    choice: PlanChoice
    note: str = ""
    """With `reject`: what the person wants changed."""


class PlanScreen(ModalScreen[PlanAnswer]):
    DEFAULT_CSS = """
    PlanScreen { align: center middle; }
    PlanScreen > #dialog {
        width: 90%; max-width: 110; height: auto; max-height: 90%;
        border: thick $accent; background: $surface; padding: 0 1;
    }
    PlanScreen #question { text-style: bold; color: $accent; }
    PlanScreen #plan-scroll { height: auto; max-height: 30; background: $boost; }
    PlanScreen #note { display: none; margin-top: 1; }
    PlanScreen.-rejecting #note { display: block; }
    PlanScreen #buttons { height: auto; margin-top: 1; }
    PlanScreen #buttons Button { margin-right: 1; min-width: 10; }
    """
    BINDINGS = [
        Binding("y", "answer('approve')", "Approve"),
        Binding("k,escape", "answer('keep')", "Keep planning"),
        Binding("r", "answer('reject')", "Reject with a note"),
    ]

    def __init__(self, plan: str) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label("The plan agent proposes this plan. Build it?", id="question")
            with VerticalScroll(id="plan-scroll"):
                yield Markdown(self.plan, id="plan")
            yield Input(placeholder="What should change? Enter sends, Esc goes back", id="note")
            with Horizontal(id="buttons"):
                yield Button("Approve and build (y)", id="approve", variant="success")
                yield Button("Keep planning (k)", id="keep", variant="primary")
                yield Button("Reject with a note (r)", id="reject", variant="error")

    def on_mount(self) -> None:
        self.query_one("#approve", Button).focus()  # Enter approves; Tab moves along

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(event.button.id)  # type: ignore[arg-type]

    def action_answer(self, choice: PlanChoice) -> None:
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
