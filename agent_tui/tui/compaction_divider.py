"""Where a compaction happened: a divider line and the summary, collapsible."""

from __future__ import annotations

from textual.containers import Vertical
from textual.widgets import Collapsible, Static

from agent_tui.tui.text_part_view import TextPartView

SUMMARY_TITLE = "Summary"
EDITED_TITLE = "Summary (edited by you)"


def divider_label(auto: bool, state: str) -> str:
    if state == "done":
        return f"Conversation compacted — {'auto' if auto else 'manual'}"
    if state == "cancelled":
        return "Compaction cancelled — nothing was lost"
    if state == "undone":
        return "Compaction undone — the history before it is back"
    return "Compacting the conversation…"


class CompactionDivider(Vertical):
    DEFAULT_CSS = """
    CompactionDivider { height: auto; margin: 1 0; }
    CompactionDivider > .label {
        width: 100%;
        content-align: center middle;
        color: $accent;
        text-style: bold;
        border-top: heavy $accent;
        border-bottom: heavy $accent;
    }
    CompactionDivider Collapsible { border: none; padding: 0; background: transparent; }
    CompactionDivider.-cancelled > .label { color: $text-muted; border-top: dashed $panel;
        border-bottom: dashed $panel; }
    """

    def __init__(
        self, auto: bool, summary: str = "", state: str = "running", *, edited: str | None = None
    ):
        self.auto = auto
        self.state = state
        self.edited = edited
        """The person's correction of the summary, shown instead of it."""
        self._label = Static(divider_label(auto, state), markup=False, classes="label")
        self._summary = TextPartView(summary if edited is None else edited)
        title = SUMMARY_TITLE if edited is None else EDITED_TITLE
        self._collapsible = Collapsible(self._summary, title=title, collapsed=True)
        super().__init__(self._label, self._collapsible)
        self.set_class(state == "cancelled", "-cancelled")

    async def show_summary(self, text: str) -> None:
        if self.edited is None:
            await self._summary.show(text)

    async def show_edit(self, edited: str | None, written: str) -> None:
        """The summary's text after an edit (None: back to what the summariser wrote)."""
        self.edited = edited
        replacement = TextPartView(written if edited is None else edited)
        await self._summary.remove()
        await self._collapsible.query_one(Collapsible.Contents).mount(replacement)
        self._summary = replacement
        self._collapsible.title = SUMMARY_TITLE if edited is None else EDITED_TITLE

    def set_state(self, state: str) -> None:
        self.state = state
        self._label.update(divider_label(self.auto, state))
        self.set_class(state == "cancelled", "-cancelled")
