"""What code, not the summariser, carries across a summary: the pinned messages
(context/pins.py) and the file ledger (context/ledger.py).

Both are computed once, when a summary is applied, and stored on the summary message, so
the model messages built from it are the same at every step (prompt caching).

- `carry_into` fills a new summary: every path that applies a summary calls it once the
  summary's text is final, before `boundary.install` (compaction.process after the
  summariser's answer; prepared.apply before it checks what the applied summary leaves);
  `announce_left_out` is called by `install` when the summary is in force.
- `step/after_summary.after_summary_blocks` is what `step/messages.to_model_messages`
  restates after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_tui.budget.overflow import usable_tokens
from agent_tui.context.ledger import span_ledger
from agent_tui.context.pins import choose_pins, current_pins, pin_budget
from agent_tui.events import Notice
from agent_tui.records import AssistantMessage, MessageWithParts, Session
from agent_tui.step.after_summary import describe

if TYPE_CHECKING:
    from agent_tui.engine_context import EngineContext
    from agent_tui.provider.limits import ModelInfo


async def carry_into(
    ctx: EngineContext,
    session: Session,
    summary: AssistantMessage,
    summarised: list[MessageWithParts],
    model: ModelInfo,
) -> None:
    """Set the summary's pins (the session's pins now, within the budget of `model`'s
    window: the session's model) and its ledger (`summarised`, the span it replaces,
    starting with the summary before it if any, merged), once its text is final."""
    config = ctx.config.compaction
    budget = pin_budget(usable_tokens(model.limit, config), config)
    kept, left_out = choose_pins(await current_pins(ctx.db, session.id), budget, model.id)
    summary.pins, summary.pins_left_out, summary.pin_budget = kept, left_out, budget
    pinned_words = {p.text for p in kept if p.kind == "person"}
    summary.restated = [text for text in summary.restated if text not in pinned_words]
    summary.ledger = span_ledger(summarised, Path(session.directory))


def announce_left_out(ctx: EngineContext, session_id: str, summary: AssistantMessage) -> None:
    """A notice naming the pins a summary now in force could not restate (a summary
    prepared but not used says nothing)."""
    left_out = summary.pins_left_out
    if not left_out:
        return
    names = "; ".join(f"{p.id} ({describe(p)}, about {p.tokens:,} tokens)" for p in left_out)
    note = (
        f"Compaction: {len(left_out)} pinned item(s) did not fit the {summary.pin_budget:,} "
        "tokens pins may take (compaction.pin_tokens) and are only named after the summary: "
        f"{names}. Unpin some or raise compaction.pin_tokens."
    )
    ctx.publish(Notice(session_id=session_id, level="warning", message=note))
