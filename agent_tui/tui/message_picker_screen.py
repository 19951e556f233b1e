"""Pick one of the person's messages (`/compact --up-to` with no id): newest first, each
with its first line and when it was sent."""

from __future__ import annotations

import datetime as dt

from rich.text import Text
from textual.widgets.option_list import Option

from agent_tui.tui.choice_screen import ListScreen

Row = tuple[str, str, int]
"""(message id, its text, when it was sent in ms)."""


def row_text(text: str, sent: int) -> Text:
    first = text.strip().splitlines()[0] if text.strip() else "(empty)"
    shown = Text(first[:100], style="bold")
    shown.append(f"\n{dt.datetime.fromtimestamp(sent / 1000):%Y-%m-%d %H:%M}", style="dim")
    return shown


class MessagePickerScreen(ListScreen):
    DEFAULT_CSS = """
    MessagePickerScreen { align: center middle; }
    MessagePickerScreen #box {
        width: 90%; max-width: 110; height: 80%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    MessagePickerScreen #heading { text-style: bold; margin-bottom: 1; }
    MessagePickerScreen OptionList { height: 1fr; }
    """

    def __init__(self, heading: str, rows: list[Row]) -> None:
        super().__init__(heading, [Option(row_text(t, s), id=i) for i, t, s in rows])
