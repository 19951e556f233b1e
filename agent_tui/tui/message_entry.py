"""What the conversation view keeps of one message, mounted or not, and its widget.

The view holds an entry per message it shows; only a window of them has widgets. An
entry holds the message's info and parts (the same objects the events carry, not
copies) and the little view state that is not in the database (a queued mark, a
divider's state and summary), so a widget can be rebuilt exactly when it scrolls back
into the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.widget import Widget

from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    Message,
    MessageWithParts,
    Part,
    TextPart,
    ToolPart,
)
from agent_tui.tui.assistant_message_view import AssistantMessageView
from agent_tui.tui.compaction_divider import CompactionDivider
from agent_tui.tui.tool_line import ToolLine
from agent_tui.tui.user_message_view import UserMessageView

DIVIDER_LINES = 5
"""Rows of a compaction divider (label, borders, the collapsed summary, margins)."""
MESSAGE_MARGIN = 2


@dataclass
class MessageEntry:
    info: Message
    parts: dict[str, Part] = field(default_factory=dict)
    queued: bool = False
    """A person's message sent while the agent worked, until the next step starts."""
    held: bool = False
    """Still queued when the turn ended (interrupted, failed): it goes with the next one."""
    divider_state: str = "running"
    summary: str = ""
    edited_summary: str | None = None
    """The person's correction of the summary (`/summary`), shown instead of it."""
    auto: bool | None = None
    """Whether the compaction was automatic, once it is known to have finished."""

    @classmethod
    def of(cls, message: MessageWithParts) -> MessageEntry:
        return cls(message.info, {p.id: p for p in message.parts})

    @property
    def key(self) -> str:
        return self.info.id

    def compaction(self) -> CompactionPart | None:
        return next((p for p in self.parts.values() if isinstance(p, CompactionPart)), None)

    def text(self) -> str:
        """The text a person reads: user words, or an assistant step's reply."""
        return "\n".join(
            p.text
            for p in self.parts.values()
            if isinstance(p, TextPart) and not p.synthetic and not p.ignored and p.text
        )


def build_widget(entry: MessageEntry) -> Widget | None:
    """The widget that shows an entry now, or None when there is nothing to show yet."""
    info = entry.info
    if isinstance(info, AssistantMessage):
        if not entry.parts and info.error is None:
            return None
        return AssistantMessageView(info, list(entry.parts.values()))
    if (part := entry.compaction()) is not None:
        auto = part.auto if entry.auto is None else entry.auto
        return CompactionDivider(
            auto, entry.summary, entry.divider_state, edited=entry.edited_summary
        )
    # A `!command` (a tool part in a person's message), open: they ran it to see its output.
    if tool := next((p for p in entry.parts.values() if isinstance(p, ToolPart)), None):
        line = ToolLine(tool)
        line.add_class("-shell")
        line.collapsed = False
        return line
    if text := entry.text():
        view = UserMessageView(
            text, message_id=info.id, queued=entry.queued, pinned=info.pinned is not None
        )
        view.held = entry.held
        return view
    return None


def estimated_lines(entry: MessageEntry, width: int) -> int:
    """Rows the entry's widget will take, roughly: decides how much to mount at first."""
    if entry.compaction() is not None:
        return DIVIDER_LINES
    width = max(width, 20)
    rows = MESSAGE_MARGIN
    for part in entry.parts.values():
        if isinstance(part, TextPart):
            rows += sum(1 + len(line) // width for line in part.text.splitlines())
        elif isinstance(part, ToolPart):
            rows += 1
    return rows
