"""A modal list to choose one item from: Enter or a click answers its option's id, Esc None."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option


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
