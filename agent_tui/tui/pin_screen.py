"""The list `/pin` opens: what can be pinned, newest first, the pinned ones marked.
Enter pins (or unpins) the highlighted one and closes; p does it and stays open."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.storage.models import PinnedText
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
        self.choices = {item.id: [item, pinned] for item, pinned in choices}
        self._toggle = toggle

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield Label(HEADING, id="heading")
            yield OptionList(
                *(Option(row_text(item, pinned), id=item.id) for item, pinned in self.rows()),
                id="pins",
            )

    def rows(self) -> list[tuple[PinnedText, bool]]:
        return [(item, pinned) for item, pinned in self.choices.values()]

    def on_mount(self) -> None:
        """The agent's newest reply is highlighted: Enter pins it."""
        listing = self.query_one(OptionList)
        kinds = [item.kind for item, _ in self.rows()]
        listing.highlighted = kinds.index("agent") if "agent" in kinds else 0 if kinds else None

    async def _flip(self, item_id: str) -> None:
        entry = self.choices[item_id]
        entry[1] = await self._toggle(item_id, not entry[1])
        item = entry[0]
        assert isinstance(item, PinnedText)
        self.query_one(OptionList).replace_option_prompt(item_id, row_text(item, bool(entry[1])))

    async def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            await self._flip(event.option.id)
        self.dismiss(None)

    async def action_toggle(self) -> None:
        listing = self.query_one(OptionList)
        if listing.highlighted is None:
            return
        option = listing.get_option_at_index(listing.highlighted)
        if option.id is not None:
            await self._flip(option.id)
