"""The actions on one message or tool line, as a menu (ctrl+o on it, or Enter on a message
of yours): letters typed while it has focus go to the prompt instead (Conversation.on_key),
so nothing here can be run by typing."""

from __future__ import annotations

from textual.widgets.option_list import Option

from agent_tui.tui.choice_screen import ListScreen

MENU_KEY = "ctrl+o"


class MessageActionsScreen(ListScreen):
    def __init__(self, heading: str, actions: list[tuple[str, str]]) -> None:
        """`actions`: (id answered, label shown)."""
        super().__init__(heading, [Option(label, id=ident) for ident, label in actions])
