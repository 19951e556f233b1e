"""A message the person typed. Clicked (focused): `u` compacts up to it, `f` forks the
session there."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Static

QUEUED_NOTE = "  (queued — the agent will read it when its current step ends)"
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
    BINDINGS = [
        Binding("u", "here('compact')", "Compact up to here", show=False),
        Binding("f", "here('fork')", "Fork from here", show=False),
    ]
    can_focus = True

    class Here(Message):
        """A command about this message: `compact` up to it, `fork` the session there."""

        def __init__(self, command: str, message_id: str) -> None:
            super().__init__()
            self.command = command
            self.message_id = message_id

    def __init__(
        self, text: str, *, message_id: str = "", queued: bool = False, pinned: bool = False
    ) -> None:
        self.text = text
        self.message_id = message_id
        super().__init__(markup=False)
        self.set_class(pinned, "-pinned")
        self.queued = queued

    @property
    def queued(self) -> bool:
        return self.has_class("-queued")

    @queued.setter
    def queued(self, value: bool) -> None:
        self.set_class(value, "-queued")
        self._show()

    @property
    def pinned(self) -> bool:
        return self.has_class("-pinned")

    @pinned.setter
    def pinned(self, value: bool) -> None:
        self.set_class(value, "-pinned")
        self._show()

    def action_here(self, command: str) -> None:
        if self.message_id and not self.queued:
            self.post_message(self.Here(command, self.message_id))

    def _show(self) -> None:
        notes = (QUEUED_NOTE if self.queued else "") + (PINNED_NOTE if self.pinned else "")
        self.update(self.text + notes)
