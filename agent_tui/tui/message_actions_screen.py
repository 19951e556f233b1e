"""The actions on one message or tool line, as a menu (ctrl+o on it, or Enter on a message
of yours): letters typed while it has focus go to the prompt instead (Conversation.on_key),
so nothing here can be run by typing."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.tui.choice_screen import ChoiceScreen

MENU_KEY = "ctrl+o"


class MessageActionsScreen(ChoiceScreen):
    DEFAULT_CSS = """
    MessageActionsScreen { align: center middle; }
    MessageActionsScreen #box {
        width: 60; height: auto; max-height: 80%;
        border: thick $primary; background: $surface; padding: 0 1;
    }
    MessageActionsScreen #heading { text-style: bold; margin-bottom: 1; }
    MessageActionsScreen OptionList { height: auto; max-height: 12; }
    """

    def __init__(self, heading: str, actions: list[tuple[str, str]]) -> None:
        """`actions`: (id answered, label shown)."""
        super().__init__()
        self.heading = heading
        self.actions = actions

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield Label(f"{self.heading} — Enter chooses, Esc closes", id="heading")
            yield OptionList(*(Option(label, id=ident) for ident, label in self.actions))
