"""Pins: a message (the person's or the agent's) or a tool result the person pinned is
restated verbatim after every summary, within `compaction.pin_tokens`; a pin that does
not fit is named after the summary and in a notice, never dropped silently. Here: what a
pin restates and which fit when compacting; step/after_summary.py renders them.

The flag is the item's own `pinned` field (message info or tool part, JSON: no
migration). A compaction copies what it restates onto its summary (`AssistantMessage.pins`,
context/carried.py), so pinning or unpinning changes nothing the model sees until the next
compaction: the cached prompt prefix never moves. Pinned tool results are never pruned.
Pinning and unpinning themselves are commands: session/pin_changes.py.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from agent_tui.budget.tokens import count_tokens
from agent_tui.config.settings import CompactionConfig
from agent_tui.context.restate import typed_text
from agent_tui.records import (
    MessageWithParts,
    PinnedText,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    UserMessage,
)
from agent_tui.step.after_summary import pinned_block
from agent_tui.tool_lines import short_input

if TYPE_CHECKING:
    from agent_tui.storage.db import Database

PIN_SHARE = 0.10
"""Pins restated after a summary may take this share of usable by default (at least
PIN_MIN, at most PIN_MAX tokens): they are what the person chose to keep word for word."""
PIN_MIN = 1_000
PIN_MAX = 20_000
LABEL_CHARS = 60


def pin_budget(usable: int, config: CompactionConfig) -> int:
    """Tokens pins may take after a summary: `compaction.pin_tokens`, else PIN_SHARE of
    usable (PIN_MAX when the window is unknown: nothing overflows then)."""
    if config.pin_tokens is not None:
        return config.pin_tokens
    if usable <= 0:
        return PIN_MAX
    return max(PIN_MIN, min(int(usable * PIN_SHARE), PIN_MAX))


# ---- what a pin restates --------------------------------------------------------------


def _label(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= LABEL_CHARS else flat[: LABEL_CHARS - 1] + "…"


def message_pin(message: MessageWithParts) -> PinnedText | None:
    """What pinning a message restates: the person's words, or the agent's text."""
    text = typed_text(message)
    if not text:
        return None
    kind = "person" if isinstance(message.info, UserMessage) else "agent"
    return PinnedText(id=message.info.id, kind=kind, label=_label(text), text=text)


def tool_pin(part: ToolPart) -> PinnedText | None:
    """What pinning a tool result restates: the call and its whole result (as the
    model first saw it, even if pruned since)."""
    state = part.state
    if isinstance(state, ToolStateCompleted):
        result = state.output
    elif isinstance(state, ToolStateError):
        result = state.error or "Tool failed."
    else:
        return None
    return PinnedText(
        id=part.id,
        kind="tool",
        tool=part.tool,
        call=json.dumps(state.input, ensure_ascii=False),
        label=f"{part.tool} {_label(short_input(state.input))}".strip(),
        text=result,
    )


def choose_pins(
    items: list[PinnedText], budget: int, model: str
) -> tuple[list[PinnedText], list[PinnedText]]:
    """Oldest first, each kept whole while the budget allows; the rest are named (their
    text is not stored again)."""
    kept: list[PinnedText] = []
    left_out: list[PinnedText] = []
    used = 0
    for item in items:
        tokens = count_tokens(pinned_block(item), model)
        if used + tokens <= budget:
            kept.append(item.model_copy(update={"tokens": tokens}))
            used += tokens
        else:
            left_out.append(item.model_copy(update={"tokens": tokens, "text": "", "call": ""}))
    return kept, left_out


async def current_pins(db: Database, session_id: str) -> list[PinnedText]:
    """Everything pinned in the session now, oldest first (undone turns left out)."""
    messages, parts = await db.pinned(session_id)
    found = [
        ((m.info.id, ""), item) for m in messages if not m.info.undone and (item := message_pin(m))
    ]
    for part in parts:
        if not isinstance(part, ToolPart) or part.ignored:
            continue
        holder = await db.get_message(part.message_id)
        item = None if holder.undone else tool_pin(part)
        if item is not None:
            found.append(((part.message_id, part.id), item))
    return [item for _, item in sorted(found, key=lambda pair: pair[0])]
