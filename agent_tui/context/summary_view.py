"""What `/summary` and `agent-tui summary` show, and the person's correction of it.

The summary in force is the one answering the session's compaction boundary. Around it
the model sees what was restated after it (the person's words, the todo list, the plan,
pinned messages and tool results, the file ledger) and the verbatim tail
of steps the compaction kept. An edit is stored beside the summariser's text
(`AssistantMessage.edited_summary`); the text parts stay as written, so `export` keeps
both, `uncompact` works as before and a later compaction starts from the edit.
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import BaseModel

from agent_tui.budget.tokens import count_tokens
from agent_tui.context.restate import typed_text
from agent_tui.context.tail import message_tokens
from agent_tui.engine_context import EngineContext
from agent_tui.errors import UsageError
from agent_tui.events import MessageUpdated
from agent_tui.ids import local_time, now_ms
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    Session,
    ToolPart,
    ToolStateCompleted,
    UserMessage,
)
from agent_tui.scope import SessionScope
from agent_tui.step.after_summary import LEDGER_HEADER, describe, ledger_text
from agent_tui.step.messages import summary_for, summary_text, written_summary

QUOTE_CHARS = 70
"""How much of a message the "from where" line quotes."""
CACHE_NOTE = (
    "The model sees the edited text from its next step on. The prompt before the summary "
    "stays cached; from the summary on it is written to the cache again once."
)
NO_COMPACTION = (
    "No compaction yet in this session: the model sees the whole conversation, so there "
    "is no summary to read or edit. /compact (or `agent-tui compact`) summarises it now."
)


class KeptTail(BaseModel):
    """The steps a compaction kept verbatim before its boundary."""

    messages: int
    steps: int
    tokens: int
    """Estimated (local count), as sent to the model now."""
    start_id: str
    started: int
    """When its first message was written (ms)."""
    start: str
    """Where it starts, as a person reads it: their message, or a step of a turn."""
    shortened: bool
    """The newest step was larger than the tail budget: its outputs were shortened."""


class SummaryInForce(BaseModel):
    """`/summary`: the summary the model sees now and what surrounds it."""

    laid_out: ClassVar[bool] = True
    """Indented sections: a Markdown view keeps them (acp/markdown.py)."""

    session_id: str
    compacted: bool
    """False: no compaction yet (every other field is empty)."""
    summary_id: str | None = None
    request_id: str | None = None
    auto: bool = False
    instructions: str | None = None
    """What `/compact INSTRUCTIONS` asked of the summariser."""
    created: int | None = None
    model: str = ""
    """The model that wrote it."""
    text: str = ""
    """The text the model sees: the person's edit if any, else the summariser's."""
    tokens: int = 0
    edited: bool = False
    edited_at: int | None = None
    original: str = ""
    """What the summariser wrote (kept in the database whatever the edit)."""
    restated: list[str] = []
    """The person's own words restated after it, newest first."""
    todos: str = ""
    plan: str = ""
    pinned: list[str] = []
    """Pinned messages and tool results restated verbatim after it (what, then the text)."""
    pins_left_out: list[str] = []
    """Pins over `compaction.pin_tokens` when it was written: named after it, not restated."""
    ledger: str = ""
    """The file ledger restated after it, one line per file ("" when none was touched)."""
    tail: KeptTail | None = None
    """None: the compaction kept no verbatim tail."""
    since_messages: int = 0
    """Messages after the compaction (its "continue" message included)."""
    since_steps: int = 0
    context_estimate: int | None = None
    """The estimated size of the history right after the compaction."""

    def message(self) -> str:
        return render_summary(self)


def _count(text: str, tail: list[MessageWithParts], model: str) -> tuple[int, int]:
    return count_tokens(text, model), message_tokens(tail, model) if tail else 0


def _quote(text: str) -> str:
    line = " ".join(text.split())
    return f"“{line[:QUOTE_CHARS]}…”" if len(line) > QUOTE_CHARS else f"“{line}”"


def _tail(messages: list[MessageWithParts], info: AssistantMessage) -> list[MessageWithParts]:
    start = info.tail_start_id
    if start is None:
        return []
    return [m for m in messages if start <= m.info.id < info.parent_id and not m.info.undone]


async def _tail_start(ctx: EngineContext, session: Session, first: MessageWithParts) -> str:
    """Where the tail starts: the person's message, or a step of the turn they started."""
    info = first.info
    if isinstance(info, UserMessage):
        typed = typed_text(first)
        return f"your message {_quote(typed)}" if typed else "a message of yours"
    turn = await ctx.db.messages(session.id, since_id=info.parent_id)
    typed = typed_text(turn[0]) if turn and turn[0].info.id == info.parent_id else ""
    return f"a step of the turn you began with {_quote(typed)}" if typed else "a step"


def _pending_compaction(messages: list[MessageWithParts], compaction_id: str) -> bool:
    """A compaction request after the boundary that no summary has answered yet."""
    answered = {
        m.info.parent_id
        for m in messages
        if isinstance(m.info, AssistantMessage)
        and m.info.summary
        and (m.info.finish or m.info.error)
    }
    return any(
        m.info.id > compaction_id
        and not m.info.undone
        and m.info.id not in answered
        and any(isinstance(p, CompactionPart) for p in m.parts)
        for m in messages
    )


async def _current(
    ctx: EngineContext, session: Session
) -> tuple[list[MessageWithParts], MessageWithParts | None]:
    if session.compaction_id is None:
        return [], None
    messages = await ctx.db.messages(session.id, since_id=session.history_start)
    return messages, summary_for(messages, session.compaction_id)


async def _kept_tail(
    ctx: EngineContext, session: Session, tail: list[MessageWithParts], tokens: int
) -> KeptTail:
    return KeptTail(
        messages=len(tail),
        steps=sum(1 for m in tail if isinstance(m.info, AssistantMessage)),
        tokens=tokens,
        start_id=tail[0].info.id,
        started=tail[0].info.created,
        start=await _tail_start(ctx, session, tail[0]),
        shortened=any(
            isinstance(p, ToolPart)
            and isinstance(p.state, ToolStateCompleted)
            and p.state.shortened is not None
            for m in tail
            for p in m.parts
        ),
    )


async def summary_in_force(scope: SessionScope, model: str | None = None) -> SummaryInForce:
    """The summary the model sees now, what was restated after it and what was kept
    (`/summary`); tokens counted for `model`, else the session's."""
    ctx, session = scope.ctx, scope.session
    model = model or await scope.model()
    messages, summary = await _current(ctx, session)
    if summary is None:
        return SummaryInForce(session_id=session.id, compacted=False)
    info = summary.info
    assert isinstance(info, AssistantMessage)
    request = next((m for m in messages if m.info.id == info.parent_id), None)
    parts = request.parts if request else []
    part = next((p for p in parts if isinstance(p, CompactionPart)), None)
    tail = _tail(messages, info)
    text = summary_text(summary)
    # Counting loads a tokenizer the first time: off the event loop.
    tokens, tail_tokens = await asyncio.to_thread(_count, text, tail, model)
    kept = await _kept_tail(ctx, session, tail, tail_tokens) if tail else None
    since = [
        m for m in messages if m.info.id > info.parent_id and m is not summary and not m.info.undone
    ]
    return SummaryInForce(
        session_id=session.id,
        compacted=True,
        summary_id=info.id,
        request_id=info.parent_id,
        auto=part.auto if part else False,
        instructions=part.instructions if part else None,
        created=info.created,
        model=info.model,
        text=text,
        tokens=tokens,
        edited=info.edited_summary is not None,
        edited_at=info.edited_at,
        original=written_summary(summary),
        restated=info.restated,
        todos=info.todos,
        plan=info.plan,
        pinned=[f"{describe(item)}: {item.text}" for item in info.pins],
        pins_left_out=[f"{describe(p)} (about {p.tokens:,} tokens)" for p in info.pins_left_out],
        ledger=ledger_text(info.ledger).removeprefix(LEDGER_HEADER).strip("\n"),
        tail=kept,
        since_messages=len(since),
        since_steps=sum(
            1 for m in since if isinstance(m.info, AssistantMessage) and not m.info.summary
        ),
        context_estimate=info.context_estimate,
    )


class SummaryEdit(BaseModel):
    """What saving an edit did."""

    summary_id: str
    changed: bool
    """False: the text was already in force; nothing was written."""
    edited: bool
    """False: the summary is back to the summariser's text."""

    def message(self) -> str:
        if not self.changed:
            return "Summary unchanged: nothing was saved."
        if self.edited:
            return (
                "Summary edited. The summariser's text stays in the session (reverting "
                f"restores it). {CACHE_NOTE}"
            )
        return f"Summary back to the summariser's text. {CACHE_NOTE}"


async def save_edit(scope: SessionScope, summary_id: str, text: str | None) -> SummaryEdit:
    """Store the person's text for the summary in force, which the model sees from its
    next step on (None, or the summariser's own text: back to it; that text stays in the
    database either way). UsageError, nothing written, when `summary_id` is no longer the
    summary in force or a compaction is under way (its summary would replace the edit).
    Allowed while the agent works here; held against an uncompact elsewhere."""
    with scope.held():
        ctx, session = scope.ctx, await scope.fresh()
        messages, summary = await _current(ctx, session)
        if summary is None:
            raise UsageError(NO_COMPACTION)
        info = summary.info
        assert isinstance(info, AssistantMessage)
        if info.id != summary_id:
            raise UsageError(
                "The summary you edited is no longer the one in force: the session was compacted "
                "or uncompacted meanwhile. Nothing was saved; open /summary (or run `agent-tui "
                "summary`) again to edit the summary in force."
            )
        if _pending_compaction(messages, info.parent_id):
            raise UsageError(
                "A compaction is under way: its new summary will replace this one. Nothing was "
                "saved; edit the new summary once the compaction has finished."
            )
        original = written_summary(summary)
        if text is not None:
            text = text.strip()
            if not text:
                raise UsageError(
                    "The edited summary is empty: nothing was saved. To go back to the "
                    "summariser's text, restore it (Ctrl+R in the app, `agent-tui summary "
                    "--revert`)."
                )
            if text == original.strip():
                text = None
        if text == info.edited_summary:
            return SummaryEdit(summary_id=info.id, changed=False, edited=text is not None)
        updated = info.model_copy(
            update={"edited_summary": text, "edited_at": now_ms() if text is not None else None}
        )
        await ctx.db.upsert_message(updated, flush=True)
        ctx.publish(MessageUpdated(info=updated))
        return SummaryEdit(summary_id=info.id, changed=True, edited=text is not None)


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def render_summary(view: SummaryInForce) -> str:
    """`/summary` as a person reads it."""
    if not view.compacted:
        return NO_COMPACTION
    how = "automatic" if view.auto else "manual"
    head = f"The summary in force: {how} compaction"
    if view.created is not None:
        head += f" of {local_time(view.created)}"
    head += f", written by {view.model}" if view.model else ""
    lines = [head + f" (about {_plural(view.tokens, 'token')})."]
    if view.instructions:
        lines.append(f"Asked of it: {view.instructions}")
    if view.edited:
        when = f" at {local_time(view.edited_at)}" if view.edited_at else ""
        lines.append(
            f"Edited by you{when}: the model sees your text; the summariser's stays in the "
            "session (Ctrl+R in the editor or `agent-tui summary --revert` restores it)."
        )
    lines += ["", view.text, "", "Restated after it, verbatim:"]
    if view.restated:
        lines.append(f"  Your words: {_plural(len(view.restated), 'message')}, newest first:")
        lines += [f"    {_quote(text)}" for text in view.restated]
    else:
        lines.append("  Your words: none (no message of yours was summarised, or none fitted).")
    lines.append(
        "  Todo list: " + ("as it was then:" if view.todos else "none when it was written.")
    )
    lines += [f"    {line}" for line in view.todos.splitlines()]
    lines.append("  Plan: " + ("the newest plan_exit plan:" if view.plan else "none."))
    lines += [f"    {line}" for line in view.plan.splitlines()]
    lines += _pins_and_ledger_lines(view)
    lines.append("")
    if view.tail is None:
        lines.append("Kept verbatim: nothing (the compaction kept no tail of steps).")
    else:
        tail = view.tail
        lines.append(
            f"Kept verbatim before its boundary: {_plural(tail.steps, 'step')} "
            f"({_plural(tail.messages, 'message')}, about {_plural(tail.tokens, 'token')}), "
            f"from {tail.start} ({local_time(tail.started)})."
        )
        if tail.shortened:
            lines.append("  The newest step's outputs were shortened to fit (full text saved).")
    lines.append(
        f"Since the compaction: {_plural(view.since_messages, 'message')} "
        f"({_plural(view.since_steps, 'step')})."
    )
    if view.context_estimate:
        lines.append(f"Right after it the history was about {view.context_estimate:,} tokens.")
    return "\n".join(lines)


def _pins_and_ledger_lines(view: SummaryInForce) -> list[str]:
    lines = [
        f"  Pinned: {_plural(len(view.pinned), 'item')}:"
        if view.pinned
        else "  Pinned: nothing (/pin pins a message or a tool result)."
    ]
    lines += [f"    {_quote(text)}" for text in view.pinned]
    if view.pins_left_out:
        lines.append("  Pinned but over compaction.pin_tokens, only named:")
        lines += [f"    {text}" for text in view.pins_left_out]
    if view.ledger:
        lines.append("  File ledger (written by agent-tui, not the model):")
        lines += [f"    {line}" for line in view.ledger.splitlines()]
    else:
        lines.append("  File ledger: no file read or changed in what it replaces.")
    return lines
