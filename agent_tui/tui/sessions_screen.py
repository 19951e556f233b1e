"""Pick a session to switch to: title, directory, updated, context %."""

from __future__ import annotations

import datetime as dt

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.command.core import Row
from agent_tui.tui.choice_screen import ChoiceScreen


def row_text(row: Row) -> Text:
    """Its title, then when it was updated, its context % and directory (`/sessions`'s
    rows, command/switching.py)."""
    data = row.data
    percent = data["context"]["percent"]
    shown = f"{percent:.0f}%" if percent is not None else "—"
    text = Text("    " * row.depth + ("● " if row.current else "  "))
    text.append(data["title"] or "(untitled)", style="bold")
    updated = dt.datetime.fromtimestamp(data["updated"] / 1000)
    text.append(
        f"\n    {'    ' * row.depth}{updated:%Y-%m-%d %H:%M}  ctx {shown:>4}  ", style="dim"
    )
    text.append(data["directory"], style="dim")
    return text


class SessionsScreen(ChoiceScreen):
    CSS_PATH = "sessions_screen.tcss"

    def __init__(self, rows: list[Row]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield Label("Sessions — Enter switches, Esc closes", id="heading")
            options = [Option(row_text(r), id=r.id) for r in self.rows]
            yield OptionList(*options, id="sessions")
            if not self.rows:
                yield Label("No sessions yet.")
