"""The list `/pin` opens: what can be pinned, newest first, the pinned ones marked.
Enter pins (or unpins) the highlighted one and closes; p does it and stays open."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.records import PinnedText
from agent_tui.tui.dialog import Dialog

PIN_MARK = "📌"
Toggle = Callable[[str, bool], Awaitable[bool]]
"""Pin (True) or unpin (False) an id; whether it is pinned afterwards."""

HEADING = (
    "Pin — restated verbatim after every compaction. Enter pins / unpins and closes · p stays · Esc"
)
KIND = {"person": "you", "agent": "agent", "tool": "tool"}


def row_text(item: PinnedText, pinned: bool) -> Text:
    text = Text(f"{PIN_MARK} " if pinned else "   ")
    text.append(f"{KIND[item.kind]:<6}", style="bold" if item.kind != "tool" else "dim")
    text.append(item.label)  # the id is in the notice that follows a pin
    return text


class PinScreen(Dialog[None]):
    BINDINGS = [
        Binding("escape", "dismiss", "Close"),
        Binding("p", "toggle", "Pin / unpin, stay"),
    ]

    def __init__(self, choices: list[tuple[PinnedText, bool]], toggle: Toggle) -> None:
        super().__init__()
        self.items = {item.id: item for item, _ in choices}
        self.pinned = {item.id for item, pinned in choices if pinned}
        self._toggle = toggle

    def content(self) -> ComposeResult:
        yield Label(HEADING, id="heading")
        yield OptionList(*(Option(self._row(i), id=i) for i in self.items), id="pins")

    def _row(self, item_id: str) -> Text:
        return row_text(self.items[item_id], item_id in self.pinned)

    def on_mount(self) -> None:
        """The agent's newest reply is highlighted: Enter pins it."""
        listing = self.query_one(OptionList)
        kinds = [item.kind for item in self.items.values()]
        listing.highlighted = kinds.index("agent") if "agent" in kinds else 0 if kinds else None

    async def _flip(self, item_id: str) -> None:
        if await self._toggle(item_id, item_id not in self.pinned):
            self.pinned.add(item_id)
        else:
            self.pinned.discard(item_id)
        self.query_one(OptionList).replace_option_prompt(item_id, self._row(item_id))

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            await self._flip(event.option.id)
        self.dismiss(None)

    async def action_toggle(self) -> None:
        option = self.query_one(OptionList).highlighted_option
        if option is not None and option.id is not None:
            await self._flip(option.id)
