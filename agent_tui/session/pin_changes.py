"""Pinning and unpinning (`/pin`, `agent-tui pin`, the app's pin key): set or clear the
`pinned` flag of a message or tool result, and report what it means for the next
compaction. What a pin restates, and its budget: context/pins.py."""

from __future__ import annotations

from typing import ClassVar

from pydantic import BaseModel

from agent_tui.budget.tokens import count_tokens
from agent_tui.context.pins import current_pins, message_pin, pin_budget, tool_pin
from agent_tui.engine_context import EngineContext
from agent_tui.errors import NotFoundError, UsageError
from agent_tui.events import MessageUpdated
from agent_tui.ids import now_ms
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    Part,
    PinnedText,
    Session,
    TextPart,
    ToolPart,
    UserMessage,
)
from agent_tui.scope import SessionScope
from agent_tui.step.after_summary import describe, pinned_block
from agent_tui.step.messages import summary_for

RECENT = 200
"""Newest messages read for the default pin, the app's list and the names in errors."""
NAMED = 6
"""Items an error names as what can be pinned."""


class PinChange(BaseModel):
    """What a pin or unpin did, for the person."""

    item: PinnedText
    pinned: bool
    """Whether it is pinned now."""
    changed: bool
    """False when it already was as asked."""
    summarised: bool
    """It lies before the compaction boundary: the summary in force replaced it."""
    restated_now: bool
    """The summary in force restates it (its copy stays until the next compaction)."""
    pins: int
    total_tokens: int
    budget: int

    def message(self) -> str:
        what = f"{self.item.id} ({describe(self.item)})"
        if not self.pinned:
            if not self.changed:
                return f"{what} was not pinned."
            text = f"Unpinned {what}: compactions no longer restate it."
            if self.restated_now:
                text += (
                    " The summary in force keeps its copy until the next compaction (changing "
                    "it now would make the provider read the whole prompt again)."
                )
            return text
        if not self.changed:
            return f"{what} was already pinned."
        text = f"Pinned {what}: restated verbatim after every compaction"
        if self.summarised:
            text += (
                ", from the next one on (the summary in force replaced it: /compact brings "
                "it back now)"
            )
        text += f". Pins take about {self.total_tokens:,} of {self.budget:,} tokens"
        text += " (compaction.pin_tokens)."
        if self.total_tokens > self.budget:
            text += (
                " Over the budget: taken oldest first, the pins that do not fit are named "
                "after the summary instead of restated; unpin some or raise "
                "compaction.pin_tokens."
            )
        return text


async def _recent(ctx: EngineContext, session: Session) -> list[MessageWithParts]:
    messages, _ = await ctx.db.recent_messages(session.id, RECENT)
    return [m for m in messages if not m.info.undone]


def pinnable(messages: list[MessageWithParts]) -> list[tuple[PinnedText, bool]]:
    """What can be pinned among `messages`, newest first, each with whether it is
    pinned: the person's messages, the agent's texts and finished tool results."""
    found: list[tuple[PinnedText, bool]] = []
    for message in reversed(messages):
        info = message.info
        summary = isinstance(info, AssistantMessage) and info.summary
        if info.undone or summary or any(isinstance(p, CompactionPart) for p in message.parts):
            continue
        for part in reversed(message.parts):
            if isinstance(part, ToolPart) and not part.ignored and (item := tool_pin(part)):
                found.append((item, part.pinned is not None))
        if isinstance(info, AssistantMessage) and not info.finish and info.error is None:
            continue  # still streaming
        if (item := message_pin(message)) is not None:
            found.append((item, info.pinned is not None))
    return found


def _named(messages: list[MessageWithParts]) -> str:
    if not (items := [item for item, _ in pinnable(messages)[:NAMED]]):
        return "This session has nothing to pin yet."
    return "The newest you can pin:\n" + listing(items)


async def _target(
    ctx: EngineContext, session: Session, item_id: str
) -> tuple[MessageWithParts | ToolPart, PinnedText]:
    """The message or tool part `item_id` names, and what pinning it restates; an error
    naming the id and what is valid otherwise."""
    item_id = item_id.strip()
    try:
        if item_id.startswith("prt_"):
            part: Part = await ctx.db.get_part(item_id)
            session_of, message_of = part.session_id, part.message_id
        elif item_id.startswith("msg_"):
            message = await ctx.db.message_with_parts(item_id)
            session_of, message_of = message.info.session_id, message.info.id
        else:
            raise NotFoundError("")
    except NotFoundError:
        recent = await _recent(ctx, session)
        raise NotFoundError(
            f"No message or tool result {item_id!r} in session {session.id}: ids start with "
            f"msg_ (a message) or prt_ (a tool result). {_named(recent)}"
        ) from None
    if session_of != session.id:
        raise UsageError(f"{item_id} belongs to session {session_of}, not to {session.id}.")
    if (await ctx.db.get_message(message_of)).undone:
        raise UsageError(f"{item_id} belongs to a turn taken back with /undo (redo it first).")
    if item_id.startswith("prt_"):
        if isinstance(part, TextPart):  # a text part: its message is what is pinned
            return await _target(ctx, session, message_of)
        if not isinstance(part, ToolPart):
            raise UsageError(
                f"{item_id} is a {part.type} part: pin its message {message_of} or one of "
                "its tool results (prt_…) instead."
            )
        if (item := tool_pin(part)) is None:
            raise UsageError(f"{item_id} ({part.tool}) is still running: pin it when it ends.")
        return part, item
    info = message.info
    if isinstance(info, AssistantMessage) and info.summary:
        raise UsageError(f"{item_id} is a summary: it is restated already (see /summary).")
    if isinstance(info, AssistantMessage) and not info.finish and info.error is None:
        raise UsageError(f"{item_id} is still streaming: pin it when the step ends.")
    if (item := message_pin(message)) is not None:
        return message, item
    tools = [p for p in message.parts if isinstance(p, ToolPart) and not p.ignored]
    if len(tools) == 1 and isinstance(info, UserMessage):  # a person's `!command`
        return await _target(ctx, session, tools[0].id)
    named = ", ".join(f"{p.id} ({p.tool})" for p in tools) or "none"
    raise UsageError(f"{item_id} has no text to pin. Its tool results: {named}.")


def _restated_by(messages: list[MessageWithParts], session: Session) -> set[str]:
    """Ids the summary in force restates."""
    found = summary_for(messages, session.compaction_id or "")
    info = found.info if found else None
    return {p.id for p in info.pins} if isinstance(info, AssistantMessage) else set()


def _usable(messages: list[MessageWithParts]) -> int:
    """The usable window the session's newest step recorded (0 when unknown)."""
    for message in reversed(messages):
        info = message.info
        if isinstance(info, AssistantMessage) and info.context_usable:
            return info.context_usable
    return 0


async def set_pin(scope: SessionScope, item_id: str | None, *, pinned: bool) -> PinChange:
    """Pin (or unpin) a message or tool result of the session: restated verbatim after
    every compaction (unpinned: left out from the next one on). Without an id, pin the
    agent's newest message with text, or unpin the only pin. Allowed while the agent
    works: the model sees nothing change until the next compaction."""
    ctx, session = scope.ctx, scope.session
    recent = await _recent(ctx, session)
    if item_id is None or not item_id.strip():
        item_id = await _default_id(ctx, session, recent, pinned=pinned)
    holder, item = await _target(ctx, session, item_id)
    before = holder.info.pinned if isinstance(holder, MessageWithParts) else holder.pinned
    changed = (before is not None) != pinned
    if changed:
        stamp = now_ms() if pinned else None
        if isinstance(holder, MessageWithParts):
            holder.info.pinned = stamp
            await ctx.db.upsert_message(holder.info, flush=True)
            ctx.publish(MessageUpdated(info=holder.info))
        else:
            holder.pinned = stamp
            await ctx.save_part(holder)
    listed = await pin_list(scope)
    boundary = min(filter(None, (session.compaction_id, session.tail_start_id)), default=None)
    message_of = holder.info.id if isinstance(holder, MessageWithParts) else holder.message_id
    restated: set[str] = set()
    if session.compaction_id is not None:
        since = await ctx.db.messages(session.id, since_id=session.compaction_id)
        restated = _restated_by(since, session)
    return PinChange(
        item=item,
        pinned=pinned,
        changed=changed,
        summarised=boundary is not None and message_of < boundary,
        restated_now=item.id in restated,
        pins=len(listed.pins),
        total_tokens=listed.total_tokens,
        budget=listed.budget,
    )


async def _default_id(
    ctx: EngineContext, session: Session, recent: list[MessageWithParts], *, pinned: bool
) -> str:
    if pinned:
        for item, _ in pinnable(recent):
            if item.kind == "agent":
                return item.id
        raise UsageError(f"Nothing to pin: the agent has not answered yet. {_named(recent)}")
    pins = await current_pins(ctx.db, session.id)
    if len(pins) == 1:
        return pins[0].id
    if not pins:
        raise UsageError("Nothing is pinned in this session.")
    raise UsageError("Several messages are pinned: name the one to unpin.\n" + listing(pins))


def listing(pins: list[PinnedText]) -> str:
    return "\n".join(f"  {p.id}  {describe(p)}" for p in pins)


class PinList(BaseModel):
    pins: list[PinnedText]
    total_tokens: int
    budget: int
    candidates: list[PinnedText]
    """The newest items that can be pinned (for a person who has none yet)."""
    title: ClassVar[str] = "Pins"
    laid_out: ClassVar[bool] = True

    def message(self) -> str:
        if not self.pins:
            lines = ["Nothing is pinned in this session."]
            if self.candidates:
                lines += ["The newest you can pin:", listing(self.candidates)]
            return "\n".join(lines)
        over = " — over the budget: the pins that do not fit are named, not restated"
        head = (
            f"Pinned ({len(self.pins)}; about {self.total_tokens:,} of {self.budget:,} tokens, "
            f"compaction.pin_tokens{over if self.total_tokens > self.budget else ''}):"
        )
        return head + "\n" + listing(self.pins)


async def pin_list(scope: SessionScope) -> PinList:
    ctx, session = scope.ctx, scope.session
    recent = await _recent(ctx, session)
    pins = await current_pins(ctx.db, session.id)
    model = next((m.info.model for m in reversed(recent) if m.info.model), ctx.config.model)
    return PinList(
        pins=pins,
        total_tokens=sum(count_tokens(pinned_block(p), model) for p in pins),
        budget=pin_budget(_usable(recent), ctx.config.compaction),
        candidates=[item for item, _ in pinnable(recent)[:NAMED]],
    )


async def pin_choices(scope: SessionScope) -> list[tuple[PinnedText, bool]]:
    """What the app's list offers, newest first: the pinnable items of the newest
    messages, then older pins (so each pin can be unpinned from the list)."""
    ctx, session = scope.ctx, scope.session
    choices = pinnable(await _recent(ctx, session))
    shown = {item.id for item, _ in choices}
    older = [p for p in await current_pins(ctx.db, session.id) if p.id not in shown]
    return choices + [(item, True) for item in reversed(older)]
