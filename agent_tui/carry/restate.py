"""The person's own words survive a compaction: their messages from the summarised span
are restated verbatim right after the summary, newest first, within a budget."""

from __future__ import annotations

from agent_tui.budget.tokens import count_tokens
from agent_tui.storage.models import MessageWithParts, TextPart, UserMessage

RESTATE_HEADER = (
    "For reference, the messages I wrote in the part of our conversation that the "
    "summary above replaces, verbatim, newest first:"
)
BRIDGE_TEXT = "The newest steps of our conversation follow verbatim."
TODOS_HEADER = "The current todo list:"
"""Heads the todo list in the summary request and where it is restated after a summary."""
TODOS_RESTATED = "The todo list when the summary above was written (todoread shows it now):"
MESSAGE_OVERHEAD_TOKENS = 8


def typed_text(message: MessageWithParts) -> str:
    """A message's own words: its text parts that are neither synthetic nor set aside."""
    return "\n".join(
        p.text
        for p in message.parts
        if isinstance(p, TextPart) and not p.synthetic and not p.ignored and p.text.strip()
    )


def person_texts(messages: list[MessageWithParts]) -> list[str]:
    """What the person typed, one entry per message, oldest first (no synthetic text)."""
    typed = [typed_text(m) for m in messages if isinstance(m.info, UserMessage)]
    return [text for text in typed if text]


def choose_restated(
    span: list[MessageWithParts], earlier: list[str], budget: int, model: str
) -> list[str]:
    """Newest first: the span's messages, then those an earlier summary restated; each
    kept whole while the budget allows (what does not fit is left to the summary)."""
    chosen: list[str] = []
    used = 0
    for text in [*reversed(person_texts(span)), *earlier]:
        if text in chosen:
            continue
        size = count_tokens(text, model) + MESSAGE_OVERHEAD_TOKENS
        if used + size > budget:
            continue
        chosen.append(text)
        used += size
    return chosen


def restated_text(texts: list[str]) -> str:
    quoted = "\n\n".join(f"<message>\n{text}\n</message>" for text in texts)
    return f"{RESTATE_HEADER}\n\n{quoted}"


def todos_block(todos: str, header: str = TODOS_HEADER) -> str:
    """The rendered todo list under its header (empty when there is no list)."""
    return f"{header}\n{todos}" if todos else ""
