"""Choose the model for the next prompts: the configured ones and those of the providers
with keys (with their context window), filtered as you type, or any litellm id typed in."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.provider.defaults import ModelRow
from agent_tui.tui.choice_screen import ChoiceScreen

MAX_SHOWN = 300
"""Options listed at once; the filter narrows the rest."""


def window_label(window: int) -> str:
    if not window:
        return "window ?"
    if window >= 1_000_000:
        return f"{window / 1_000_000:.2f}".rstrip("0").rstrip(".") + "M"
    return f"{window // 1000}k"


def matches(row: ModelRow, query: str) -> bool:
    """Every word of the query is in the id (so `son 4` finds claude-sonnet-4-6)."""
    model = row.id.lower()
    return all(word in model for word in query.lower().split())


class ModelScreen(ChoiceScreen):
    BINDINGS = [Binding("down", "focus_list", show=False)]

    def __init__(self, models: Sequence[ModelRow], current: str) -> None:
        super().__init__()
        self.rows = list({r.id: r for r in reversed(models)}.values())[::-1]  # first one wins
        self.current = current

    def content(self) -> ComposeResult:
        yield Label(f"Model (now {self.current}) — type to filter, or any litellm id")
        yield Input(placeholder="provider/model", id="model-input")
        yield OptionList(*self._options(""), id="models")

    def _options(self, query: str) -> list[Option]:
        shown = [r for r in self.rows if matches(r, query)][:MAX_SHOWN]
        width = max((len(r.id) for r in shown), default=0)
        return [
            Option(Text.assemble(f"{r.id:<{width}}  ", (window_label(r.window), "dim")), id=r.id)
            for r in shown
        ]

    def on_input_changed(self, event: Input.Changed) -> None:
        options = self.query_one("#models", OptionList)
        options.clear_options()
        options.add_options(self._options(event.value))
        if options.option_count:
            options.highlighted = 0

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        value = event.value.strip()
        highlighted = self.query_one("#models", OptionList).highlighted_option
        if highlighted is not None and (not value or value not in (r.id for r in self.rows)):
            # A filter picks the highlighted match; an id nothing matches is taken as typed.
            value = highlighted.id or value
        self.dismiss(value or None)

    def action_focus_list(self) -> None:
        self.query_one("#models", OptionList).focus()
