"""The person's own words survive a compaction: which of their messages from the
summarised span are restated verbatim right after the summary, newest first, within a
budget (chosen here when compacting; step/after_summary.py renders them)."""

from __future__ import annotations

from agent_tui.budget.tokens import count_tokens
from agent_tui.records import MessageWithParts, TextPart, UserMessage

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
    for text in dict.fromkeys([*reversed(person_texts(span)), *earlier]):  # each once
        size = count_tokens(text, model) + MESSAGE_OVERHEAD_TOKENS
        if used + size <= budget:
            chosen.append(text)
            used += size
    return chosen
