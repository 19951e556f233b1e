"""The box every modal screen of the app is drawn in, and the question with a button per
answer that several of them ask."""

from __future__ import annotations

from typing import Literal, TypeVar

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

ResultType = TypeVar("ResultType")
Answer = tuple[str, str, Literal["default", "primary", "success", "warning", "error"]]
"""A button: the id it answers, its label, its variant."""


class Dialog(ModalScreen[ResultType]):
    """A modal screen with its `content` in one `#box`. `dialog.tcss` styles them all, each
    rule under its screen's name: a screen's own CSS file applies to the whole app, so
    every screen's `#box` rules met in every dialog."""

    CSS_PATH = "dialog.tcss"

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield from self.content()

    def content(self) -> ComposeResult:
        yield from ()


class Question(Dialog[ResultType]):
    """A question, what it is about (`detail`'s text, or a subclass's `body`), and a button
    per answer; a button (or a binding's `answer`) answers its id."""

    def __init__(self, question: str, answers: list[Answer], detail: str | None = None) -> None:
        super().__init__()
        self.question = question
        self.answers = answers
        self.detail = detail

    def content(self) -> ComposeResult:
        yield Label(self.question, id="question")
        yield from self.body()
        with Horizontal(id="buttons"):
            for ident, label, variant in self.answers:
                yield Button(label, id=ident, variant=variant)

    def body(self) -> ComposeResult:
        if self.detail is not None:
            yield Static(self.detail, markup=False, id="detail")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(event.button.id or "")

    def action_answer(self, choice: str) -> None:
        self.dismiss(choice)  # type: ignore[arg-type]
