"""Pick a session to switch to: title, directory, updated, context %."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.context.usage import ContextUsage
from agent_tui.storage.models import Session
from agent_tui.tui.choice_screen import ChoiceScreen


@dataclass
class SessionRow:
    session: Session
    usage: ContextUsage
    current: bool = False
    depth: int = 0
    """0 for a session the person started; 1 for its subagents' sessions, and so on."""


def row_text(row: SessionRow) -> Text:
    percent = f"{row.usage.percent:.0f}%" if row.usage.percent is not None else "—"
    mark = "● " if row.current else "  "
    text = Text("    " * row.depth + mark)
    text.append(row.session.title or "(untitled)", style="bold")
    updated = dt.datetime.fromtimestamp(row.session.updated / 1000)
    text.append(
        f"\n    {'    ' * row.depth}{updated:%Y-%m-%d %H:%M}  ctx {percent:>4}  ",
        style="dim",
    )
    text.append(row.session.directory, style="dim")
    return text


class SessionsScreen(ChoiceScreen):
    CSS_PATH = "sessions_screen.tcss"

    def __init__(self, rows: list[SessionRow]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield Label("Sessions — Enter switches, Esc closes", id="heading")
            options = [Option(row_text(r), id=r.session.id) for r in self.rows]
            yield OptionList(*options, id="sessions")
            if not self.rows:
                yield Label("No sessions yet.")
