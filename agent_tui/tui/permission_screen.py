"""Asks the person whether a tool call may run: allow once, always (this session), deny."""

from __future__ import annotations

from rich.syntax import Syntax
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from agent_tui.tool.base import PermissionReply, PermissionRequest
from agent_tui.tui.dialog import Question


def _detail(request: PermissionRequest) -> Static:
    detail = request.detail or request.title
    if detail.startswith(("---", "diff ", "@@")) or "\n@@ " in detail:
        return Static(Syntax(detail, "diff", theme="ansi_dark", word_wrap=True), id="detail")
    return Static(detail, markup=False, id="detail")


class PermissionScreen(Question[PermissionReply]):
    BINDINGS = [
        Binding("a", "dismiss('once')", "Allow once"),
        Binding("A,shift+a", "dismiss('always')", "Always allow"),
        Binding("d,escape", "dismiss('deny')", "Deny"),
    ]

    def __init__(self, request: PermissionRequest) -> None:
        always = f"`{request.always}`" if request.always else "for this session"
        super().__init__(
            request.question or f"Allow {request.tool}?",
            [
                ("once", "Allow once (a)", "primary"),
                ("always", f"{request.always_label or f'Always allow {always}'} (A)", "warning"),
                ("deny", "Deny (d)", "error"),
            ],
        )
        self.request = request

    def body(self) -> ComposeResult:
        yield Static(self.request.title, markup=False, id="title")
        with VerticalScroll(id="detail-scroll"):
            yield _detail(self.request)
