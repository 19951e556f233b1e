"""Asks the person whether a tool call may run: allow once, always (this session), deny."""

from __future__ import annotations

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from agent_tui.tool.base import PermissionReply, PermissionRequest


def _detail(request: PermissionRequest) -> Static:
    detail = request.detail or request.title
    if detail.startswith(("---", "diff ", "@@")) or "\n@@ " in detail:
        return Static(Syntax(detail, "diff", theme="ansi_dark", word_wrap=True), id="detail")
    return Static(detail, markup=False, id="detail")


class PermissionScreen(ModalScreen[PermissionReply]):
    CSS_PATH = "permission_screen.tcss"
    BINDINGS = [
        Binding("a", "dismiss('once')", "Allow once"),
        Binding("A,shift+a", "dismiss('always')", "Always allow"),
        Binding("d,escape", "dismiss('deny')", "Deny"),
    ]

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(self.request.question or f"Allow {self.request.tool}?", id="question")
            yield Static(self.request.title, markup=False, id="title")
            with VerticalScroll(id="detail-scroll"):
                yield _detail(self.request)
            with Horizontal(id="buttons"):
                yield Button("Allow once (a)", id="once", variant="primary")
                always = f"`{self.request.always}`" if self.request.always else "for this session"
                yield Button(f"Always allow {always} (A)", id="always", variant="warning")
                yield Button("Deny (d)", id="deny", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id)  # type: ignore[arg-type]
