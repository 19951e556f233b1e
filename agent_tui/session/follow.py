"""A session whose loop runs in another process: follow that loop, never start a second.

The app, `run`, the ACP agent and the server may all prompt one session; its loop runs
wherever the session's lock is held (storage/session_lock.py). A prompt sent from
elsewhere is saved `queued`: the running loop re-reads the history before every step
(another process's commit invalidates the history cache), so its next step reads the
message as a <system-reminder> and answers it, as it does for a message queued in its
own process. Meanwhile the `Follower` reads what that loop writes and publishes it as
engine events, so the view shows the answer as it streams (`run` prints it), and it
returns once a step that read the message ends the turn. If that loop ends, or its
process dies, before any step read the message, the lock is free: the follower takes it
and the engine runs the loop here, with `run_until_read`: the loop again while a message
is left that no step read (one saved just as the loop decided to stop).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

from agent_tui.engine_context import EngineContext
from agent_tui.events import MessageUpdated, Notice, PartUpdated, SessionStatus
from agent_tui.records import (
    AssistantMessage,
    Message,
    MessageWithParts,
    Part,
    ReasoningPart,
    TextPart,
    UserMessage,
)
from agent_tui.session.loop import LoopResult, SessionLoop
from agent_tui.step.history import load_history
from agent_tui.step.plan import proposed_plan
from agent_tui.storage.session_lock import SessionLock, SessionLocks

FOLLOW_INTERVAL = 0.1
"""Seconds between two looks at a session another process runs (a look costs one
PRAGMA while nothing changed, and a read of the messages since the prompt otherwise)."""
ID_TIME = len("msg_") + 12
"""An id's prefix up to its millisecond: ids made in one millisecond by two processes
sort by their counters and random parts, not by when they were made."""


@dataclass
class Followed:
    """How following ended: the other loop answered (`result`), or it ended first and
    the session's lock is ours (`lock`: run the loop here)."""

    result: LoopResult | None = None
    lock: SessionLock | None = None


def read_by(info: AssistantMessage, message_id: str) -> bool:
    """The step read the message: its parent (the newest user message when it started)
    is that message or a newer one."""
    return info.parent_id >= message_id


def ends_turn(message: MessageWithParts, asked: str) -> bool:
    """A step that read message `asked` and ended the loop's turn (a final answer, an
    error or an interruption, a plan proposed; a summary only of a compaction asked
    for with `asked` itself)."""
    info = message.info
    if not isinstance(info, AssistantMessage) or not read_by(info, asked):
        return False
    if info.summary:
        return info.parent_id == asked and (info.error is not None or info.finish is not None)
    if info.error is not None or info.finish not in (None, "tool_calls"):
        return True
    return info.finish is not None and proposed_plan(message.parts) is not None


def unseen(history: list[MessageWithParts]) -> list[MessageWithParts]:
    """User messages no step has read yet (newer than every step's parent)."""
    parents = [m.info.parent_id for m in history if isinstance(m.info, AssistantMessage)]
    newest_read = max(parents, default="")
    return [m for m in history if isinstance(m.info, UserMessage) and m.info.id > newest_read]


def _result(messages: list[MessageWithParts], first: str, end: MessageWithParts) -> LoopResult:
    steps = [m.info for m in messages if isinstance(m.info, AssistantMessage)]
    info = end.info
    assert isinstance(info, AssistantMessage)
    result = LoopResult(
        steps=sum(1 for s in steps if read_by(s, first) and not s.summary),
        compactions=sum(1 for s in steps if read_by(s, first) and s.summary),
        plan=proposed_plan(end.parts),
    )
    if info.error is not None:
        aborted = info.error.kind == "aborted"
        result.outcome = "aborted" if aborted else "error"
        result.error = None if aborted else info.error.message
    return result


def _delta(before: Part | None, part: Part) -> str | None:
    """The text a streaming text or reasoning part gained since `before`."""
    if not isinstance(part, (TextPart, ReasoningPart)):
        return None
    old = before.text if isinstance(before, (TextPart, ReasoningPart)) else ""
    if len(part.text) > len(old) and part.text.startswith(old):
        return part.text[len(old) :]
    return None


@dataclass
class Follower:
    """Shows another process's loop on this engine's bus until it answered here."""

    ctx: EngineContext
    session_id: str
    locks: SessionLocks
    abort: asyncio.Event
    newest: Callable[[], str | None]
    """The newest message sent from here: following ends when it is answered."""
    _infos: dict[str, Message] = field(default_factory=dict, init=False)
    _parts: dict[str, Part] = field(default_factory=dict, init=False)
    _own: set[str] = field(default_factory=set, init=False)

    async def run(self) -> Followed:
        asked = self.newest() or await self._newest_user()
        first = asked
        since = asked[:ID_TIME]
        holder = self.locks.holder(self.session_id)
        where = holder.describe() if holder else "another agent-tui process"
        self._note(
            f"Session {self.session_id} is busy in {where}: your message is queued and "
            "its loop will answer it. Waiting for that answer here."
        )
        self._status("busy", f"Working in {where}")
        while True:
            asked = self.newest() or asked
            self._own.add(asked)
            if (done := self._answered(await self._look(since, first), first, asked)) is not None:
                return done
            # the lock is free: that loop ended (or its process died) first
            if (lock := self.locks.try_acquire(self.session_id)) is not None:
                done = self._answered(await self._look(since, first), first, asked)
                if done is not None:
                    lock.release()
                    return done
                self._note(f"{where} stopped before answering your message: answering it here.")
                return Followed(lock=lock)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.abort.wait(), FOLLOW_INTERVAL)
            if self.abort.is_set():
                self._note(f"Stopped waiting; your message stays queued for {where}.")
                self._status("idle")
                return Followed(result=LoopResult(outcome="aborted"))

    def _answered(
        self, messages: list[MessageWithParts], first: str, asked: str
    ) -> Followed | None:
        if (end := next((m for m in reversed(messages) if ends_turn(m, asked)), None)) is None:
            return None
        self._status("idle")
        return Followed(result=_result(messages, first, end))

    async def _newest_user(self) -> str:
        messages = await self.ctx.db.messages(self.session_id)
        users = [m.info.id for m in messages if isinstance(m.info, UserMessage)]
        return max(users, default="")

    async def _look(self, since: str, first: str) -> list[MessageWithParts]:
        """Read the session since the first message sent here and publish what changed:
        the steps that read it, and messages sent from other processes meanwhile."""
        messages = await self.ctx.db.messages(self.session_id, since_id=since)
        for message in messages:
            info = message.info
            shown = (
                read_by(info, first)
                if isinstance(info, AssistantMessage)
                else info.id > first and info.id not in self._own
            )
            if not shown:
                continue
            if self._infos.get(info.id) != info:
                self._infos[info.id] = info
                self.ctx.publish(MessageUpdated(info=info))
            for part in message.parts:
                if (before := self._parts.get(part.id)) != part:
                    self._parts[part.id] = part
                    self.ctx.publish(PartUpdated(part=part, delta=_delta(before, part)))
        return messages

    def _note(self, text: str) -> None:
        self.ctx.publish(Notice(session_id=self.session_id, level="info", message=text))

    def _status(self, status: str, message: str | None = None) -> None:
        self.ctx.publish(
            SessionStatus(session_id=self.session_id, status=status, message=message)  # type: ignore[arg-type]
        )


# ---- the loop here -------------------------------------------------------------------


async def run_until_read(ctx: EngineContext, session_id: str, abort: asyncio.Event) -> LoopResult:
    """The loop (its lock held), again while a message arrived that no step read: one
    queued (here or by another process) just as the loop decided to stop is answered
    too, not left behind."""
    total = LoopResult()
    answered: str | None = None
    while True:
        await _unqueue(ctx, session_id)
        result = await SessionLoop(ctx, session_id, abort).run()
        total = _merged(total, result)
        if result.outcome in ("aborted", "error") or abort.is_set():
            return total
        left = unseen(await load_history(ctx, await ctx.db.get_session(session_id)))
        if not left or left[-1].info.id == answered:  # the loop would not answer it
            return total
        answered = left[-1].info.id


async def all_read(ctx: EngineContext, session_id: str, since: int) -> bool:
    """Whether the loop has read every message sent to it: none arrived since `since`
    (`LiveSession.arrivals`), or each that did is saved and was read. Decided with no
    await after the last look: one sent later finds the loop ended and starts its own."""
    live = ctx.live(session_id)
    while live.arrivals != since or live.arriving:
        since = live.arrivals
        while live.arriving:  # saved in a moment: read it then
            live.stored.clear()
            await live.stored.wait()
        if unseen(await load_history(ctx, await ctx.db.get_session(session_id))):
            return False
    return True


async def _unqueue(ctx: EngineContext, session_id: str) -> None:
    """Messages queued for a loop that ended (or died) before any step read them are
    this loop's ordinary messages: no reminder around words no model has seen."""
    for message in unseen(await load_history(ctx, await ctx.db.get_session(session_id))):
        info = message.info
        if isinstance(info, UserMessage) and info.queued:
            message.info = info.model_copy(update={"queued": False})
            await ctx.db.upsert_message(message.info, flush=True)


def _merged(total: LoopResult, result: LoopResult) -> LoopResult:
    """Two runs of the loop in one turn, reported as one."""
    result.steps += total.steps
    result.compactions += total.compactions
    result.notes = total.notes + result.notes
    result.plan = result.plan or total.plan
    return result
