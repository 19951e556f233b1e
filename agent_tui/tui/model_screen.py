"""Choose the model for the next prompts: known ids, or any litellm id typed in."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option


class ModelScreen(ModalScreen[str | None]):
    CSS_PATH = "model_screen.tcss"
    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("down", "focus_list", show=False)]

    def __init__(self, models: list[str], current: str) -> None:
        super().__init__()
        self.models = list(dict.fromkeys(models))
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="box"):
            yield Label(f"Model (now {self.current}) — type any litellm id or pick one")
            yield Input(placeholder="provider/model", id="model-input")
            yield OptionList(*self._options(""), id="models")

    def _options(self, query: str) -> list[Option]:
        return [Option(m, id=m) for m in self.models if query.lower() in m.lower()]

    def on_input_changed(self, event: Input.Changed) -> None:
        options = self.query_one("#models", OptionList)
        options.clear_options()
        options.add_options(self._options(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        options = self.query_one("#models", OptionList)
        if not value and options.highlighted is not None:
            value = options.get_option_at_index(options.highlighted).id or ""
        self.dismiss(value or None)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_focus_list(self) -> None:
        self.query_one("#models", OptionList).focus()

    def action_cancel(self) -> None:
        self.dismiss(None)
