"""A message the person typed. Focused (clicked), Enter or ctrl+o opens its actions:
fork the session there, compact up to it (confirmed first), copy it. Letters typed go to
the prompt (Conversation.on_key)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Static

from agent_tui.tui.confirm_screen import ConfirmScreen
from agent_tui.tui.message_actions_screen import MENU_KEY, MessageActionsScreen

QUEUED_NOTE = "  (queued — the agent will read it when its current step ends)"
HELD_NOTE = "  (not read: the turn ended first — it goes with your next message)"
PINNED_NOTE = "  📌 pinned"


class UserMessageView(Static):
    DEFAULT_CSS = """
    UserMessageView {
        border-left: thick $primary;
        background: $boost;
        padding: 0 1;
        margin: 1 0 1 0;
    }
    UserMessageView.-queued { border-left: thick $warning; color: $text-muted; }
    UserMessageView:focus { border-left: thick $accent; }
    """
    BINDINGS = [Binding(f"enter,{MENU_KEY}", "actions", "Actions on this message")]
    can_focus = True

    @dataclass
    class Here(Message):
        """A command about this message: `compact` up to it, `fork` the session there."""

        command: str
        message_id: str

    queued = reactive(False, layout=True, toggle_class="-queued")
    held = reactive(False, layout=True)
    """Queued when the turn ended unread (Esc, an error)."""
    pinned = reactive(False, layout=True, toggle_class="-pinned")
    """Each adds its note after the text (`render`)."""

    def __init__(
        self, text: str, *, message_id: str = "", queued: bool = False, pinned: bool = False
    ) -> None:
        super().__init__()
        self.text = text
        self.message_id = message_id
        self.queued = queued
        self.pinned = pinned

    def render(self) -> Content:
        waiting = HELD_NOTE if self.held else QUEUED_NOTE if self.queued else ""
        notes = waiting + (PINNED_NOTE if self.pinned else "")
        return Content(self.text + notes)

    def action_actions(self) -> None:
        if not self.message_id or self.queued:
            return
        actions = [
            ("fork", "Fork from here"),
            ("compact", "Compact up to here…"),
            ("copy", "Copy the text"),
        ]
        self.app.push_screen(MessageActionsScreen("Your message", actions), self._chosen)

    def _chosen(self, command: str | None) -> None:
        if command == "compact":  # it cannot be taken back but by /uncompact: asked first
            detail = (
                "Everything up to and including it is replaced by a summary; the messages "
                "after it stay as they are. /uncompact takes it back."
            )
            confirm = ConfirmScreen("Compact up to this message?", detail, yes="Compact")
            self.app.push_screen(confirm, lambda yes: self._here("compact") if yes else None)
        elif command == "copy":  # the terminal's clipboard (OSC 52)
            self.app.copy_to_clipboard(self.text)
            self.notify("Copied your message.")
        elif command is not None:
            self._here(command)

    def _here(self, command: str) -> None:
        self.post_message(self.Here(command, self.message_id))
