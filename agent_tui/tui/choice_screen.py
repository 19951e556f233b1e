"""A modal list to choose one item from: Enter or a click answers its option's id, Esc None."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.command.core import Row, Rows
from agent_tui.tui.dialog import Dialog


class ChoiceScreen(Dialog[str | None]):
    BINDINGS = [Binding("escape", "dismiss", "Close")]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)


class ListScreen(ChoiceScreen):
    """A heading over a list of options (the message picker, a message's actions)."""

    def __init__(self, heading: str, options: list[Option]) -> None:
        super().__init__()
        self.heading = heading
        self.options = options

    def content(self) -> ComposeResult:
        yield Label(f"{self.heading} — Enter chooses, Esc closes", id="heading")
        yield OptionList(*self.options)


class RowsScreen(ListScreen):
    """Rows a command asks to choose from (command/core.py `Rows`: the sessions, the
    messages to compact up to): each its label, and a dimmed second line; the current one
    marked, a child indented under its parent."""

    def __init__(self, rows: Rows) -> None:
        super().__init__(rows.title, [Option(row_text(r), id=r.id) for r in rows.rows])
        self.rows = rows.rows


def row_text(row: Row) -> Text:
    indent = "    " * row.depth
    text = Text(indent + ("● " if row.current else "  "))
    text.append(row.first_line[:100] or "(empty)", style="bold")
    if row.detail:
        text.append(f"\n{indent}    {row.detail}", style="dim")
    return text
