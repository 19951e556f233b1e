"""A modal list to choose one item from: Enter or a click answers its option's id, Esc None."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.command.core import Row, Rows


class ChoiceScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "dismiss", "Close")]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)


class ListScreen(ChoiceScreen):
    """A heading over a list of options (the message picker, a message's actions); each
    subclass sizes its `#box`."""

    def __init__(self, heading: str, options: list[Option]) -> None:
        super().__init__()
        self.heading = heading
        self.options = options

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield Label(f"{self.heading} — Enter chooses, Esc closes", id="heading")
            yield OptionList(*self.options)


class RowsScreen(ListScreen):
    """Rows a command asks to choose from (command/core.py `Rows`: the sessions, the
    messages to compact up to): each its label, and a dimmed second line; the current one
    marked, a child indented under its parent."""

    DEFAULT_CSS = """
    RowsScreen { align: center middle; }
    RowsScreen #box {
        width: 90%; max-width: 110; height: 80%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    RowsScreen #heading { text-style: bold; margin-bottom: 1; }
    RowsScreen OptionList { height: 1fr; }
    """

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
