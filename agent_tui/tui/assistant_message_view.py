"""One assistant step: reasoning, text and tool lines in the order they arrived."""

from __future__ import annotations

from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static

from agent_tui.records import (
    AssistantMessage,
    Part,
    PatchPart,
    ReasoningPart,
    TextPart,
    ToolPart,
)
from agent_tui.tui.reasoning_part_view import ReasoningPartView
from agent_tui.tui.text_part_view import TextPartView
from agent_tui.tui.tool_line import ToolLine

INTERRUPTED = "Interrupted — what was streamed is kept."


def error_text(info: AssistantMessage) -> str | None:
    if info.error is None:
        return None
    return INTERRUPTED if info.error.kind == "aborted" else f"Error: {info.error.message}"


PINNED = "📌 pinned — restated verbatim after every compaction (/unpin to stop)"
CUT_OFF = "cut off — the stream broke here and the answer was asked again"


def set_aside_widget(part: TextPart) -> Widget:
    """Text of an attempt that broke off and was retried: kept, dimmed, marked."""
    text = part.text.rstrip()
    label = f"{text} [{CUT_OFF}]" if text else f"[{CUT_OFF}]"
    return Static(label, markup=False, classes="cut-off")


def part_widget(part: Part) -> Widget | None:
    """A new widget for a part, or None for parts that are not shown (step markers)."""
    if isinstance(part, TextPart):
        if part.synthetic:
            return None
        return set_aside_widget(part) if part.ignored else TextPartView(part.text)
    if isinstance(part, ReasoningPart):
        return ReasoningPartView(part.text)
    if isinstance(part, ToolPart):
        return ToolLine(part)
    if isinstance(part, PatchPart) and part.files:
        return Static("changed: " + ", ".join(part.files), markup=False, classes="patch")
    return None


class AssistantMessageView(Vertical):
    DEFAULT_CSS = """
    AssistantMessageView { height: auto; margin: 0 0 1 0; }
    AssistantMessageView > .patch { color: $text-muted; }
    AssistantMessageView > .cut-off { color: $text-muted; text-style: italic; }
    AssistantMessageView > .error { color: $error; }
    AssistantMessageView > .pin { color: $text-muted; }
    """

    def __init__(self, info: AssistantMessage, parts: list[Part] | None = None) -> None:
        self.info = info
        self._parts: dict[str, Widget] = {}
        children: list[Widget] = []
        for part in parts or []:
            if (widget := part_widget(part)) is not None:
                self._parts[part.id] = widget
                children.append(widget)
        # The error and pin lines, after the parts, exist only once there is one to show:
        # a page of steps mounts, styles and lays out no hidden widgets.
        self._error: Static | None = None
        self._pin: Static | None = None
        if (text := error_text(info)) is not None:
            self._error = Static(text, markup=False, classes="error")
            children.append(self._error)
        if info.pinned is not None:
            self._pin = Static(PINNED, markup=False, classes="pin")
            children.append(self._pin)
        super().__init__(*children)

    async def show_part(self, part: Part) -> None:
        widget = self._parts.get(part.id)
        if isinstance(widget, TextPartView) and isinstance(part, TextPart) and part.ignored:
            # The attempt that streamed it broke off: keep it, marked, in its place.
            replacement = set_aside_widget(part)
            self._parts[part.id] = replacement
            await self.mount(replacement, before=widget)
            await widget.remove()
            return
        if widget is None:
            # Live text starts empty and streams; other parts are built whole.
            live_text = isinstance(part, TextPart) and not (part.ignored or part.synthetic)
            widget = TextPartView() if live_text else part_widget(part)
            if widget is None:
                return
            self._parts[part.id] = widget
            await self.mount(widget, before=self._error or self._pin)
        if isinstance(widget, TextPartView) and isinstance(part, TextPart):
            await widget.show(part.text)
        elif isinstance(widget, ReasoningPartView) and isinstance(part, ReasoningPart):
            widget.show(part.text)
        elif isinstance(widget, ToolLine) and isinstance(part, ToolPart):
            widget.show(part)

    def show_info(self, info: AssistantMessage) -> None:
        self.info = info
        if self._pin is not None:
            self._pin.display = info.pinned is not None
        elif info.pinned is not None:
            self._pin = Static(PINNED, markup=False, classes="pin")
            self.mount(self._pin)
        if (text := error_text(info)) is not None:
            if self._error is None:
                self._error = Static(text, markup=False, classes="error")
                self.mount(self._error, before=self._pin)
            else:
                self._error.update(text)
