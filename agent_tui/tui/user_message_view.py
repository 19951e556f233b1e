"""A message the person typed."""

from __future__ import annotations

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
    """

    def __init__(self, text: str, *, queued: bool = False, pinned: bool = False) -> None:
        self.text = text
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

    def _show(self) -> None:
        notes = (QUEUED_NOTE if self.queued else "") + (PINNED_NOTE if self.pinned else "")
        self.update(self.text + notes)
