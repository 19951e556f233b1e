"""The model's reasoning: dimmed, collapsed by default."""

from __future__ import annotations

from textual.widgets import Collapsible, Static

REASONING_TITLE = "Thinking"


class ReasoningPartView(Collapsible):
    DEFAULT_CSS = """
    ReasoningPartView {
        border: none;
        padding: 0;
        margin: 0;
        background: transparent;
        color: $text-muted;
        text-style: italic;
    }
    ReasoningPartView > Contents { padding: 0 0 0 2; }
    """

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        self._text = text
        self._body = Static(text, markup=False)
        super().__init__(self._body, title=REASONING_TITLE, collapsed=True, id=id)

    def show(self, text: str) -> None:
        if text != self._text:
            self._text = text
            self._body.update(text)
