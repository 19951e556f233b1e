"""What the session loop reads from a history before a step: whether the turn is
answered, the compaction request waiting, the newest finished step, the recent calls
(session/loop.py decides with them)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_tui.project.agents import AgentInfo
from agent_tui.provider.limits import ModelInfo
from agent_tui.provider.stream_events import ModelRequest
from agent_tui.records import (
    AssistantMessage,
    CompactionPart,
    MessageWithParts,
    Session,
    ToolPart,
    UserMessage,
)
from agent_tui.step.doom_loop import call_signature
from agent_tui.storage.recovery import INTERRUPTED_KIND
from agent_tui.tool.registry import ToolRegistry


def latest(history: list[MessageWithParts], role: str) -> MessageWithParts | None:
    return max((m for m in history if m.info.role == role), key=lambda m: m.info.id, default=None)


def finished_after(history: list[MessageWithParts], session: Session) -> AssistantMessage | None:
    """The newest finished normal step after the latest compaction (not the summary)."""
    boundary = session.compaction_id or ""
    steps = [m.info for m in history if isinstance(m.info, AssistantMessage)]
    finished = [i for i in steps if i.finish and not i.summary and i.id > boundary]
    return max(finished, key=lambda info: info.id, default=None)


def pending_compaction(
    history: list[MessageWithParts],
) -> tuple[MessageWithParts, CompactionPart] | None:
    """The newest compaction request with no summary attempt yet. Usually the newest
    user message; after a crash mid-compaction (the half summary is discarded on resume)
    it may be older, and is still processed first."""
    answered = {
        m.info.parent_id for m in history if isinstance(m.info, AssistantMessage) and m.info.summary
    }
    for message in sorted(history, key=lambda m: m.info.id, reverse=True):
        if not isinstance(message.info, UserMessage) or message.info.id in answered:
            continue
        for part in message.parts:
            if isinstance(part, CompactionPart):
                return message, part
    return None


def recent_calls(history: list[MessageWithParts], limit: int) -> list[str]:
    """Signatures of the newest `limit` tool calls, oldest first."""
    found: list[str] = []
    for message in reversed(history):
        for part in reversed(message.parts):
            if isinstance(part, ToolPart):
                found.append(call_signature(part.tool, part.state.input))
                if len(found) >= limit:
                    return found[::-1]
    return found[::-1]


class Stop(Exception):
    """Ends the loop with the run's outcome (and the error a person reads)."""

    def __init__(self, outcome: str, error: str | None = None) -> None:
        super().__init__(outcome)
        self.outcome = outcome
        self.error = error


@dataclass
class Turn:
    """The session as the loop read it before a step."""

    session: Session
    history: list[MessageWithParts]
    last_user: MessageWithParts
    finished: AssistantMessage | None
    """The newest finished step after the boundary (its tokens say if it overflowed)."""

    @property
    def user(self) -> UserMessage:
        info = self.last_user.info
        assert isinstance(info, UserMessage)
        return info

    @property
    def directory(self) -> Path:
        return Path(self.session.directory)


@dataclass
class Step:
    """What the next model step sends."""

    agent: AgentInfo
    registry: ToolRegistry
    model: ModelInfo
    request: ModelRequest
    estimate: int
    last: bool
    """The last step allowed (max_steps): told to stop calling tools."""


def answered(last_assistant: MessageWithParts | None, last_user: MessageWithParts) -> bool:
    """Whether the newest assistant message ends the turn: it answered the newest user
    message and finished. A summary answers its compaction request; it ends the loop only
    when no newer user message waits (a request left by a crash may be older). A step
    answers the newest message only if it read it: a message saved after the step started
    (another process, or mentions still being read) can carry an older id than the
    step's. A step cut off by its process's death is resumed, not taken as the end."""
    if last_assistant is None or last_assistant.info.id <= last_user.info.id:
        return False
    info = last_assistant.info
    assert isinstance(info, AssistantMessage)
    if info.summary:
        answered_latest = info.parent_id == last_user.info.id
    else:
        answered_latest = info.parent_id >= last_user.info.id
    crashed = info.error is not None and info.error.kind == INTERRUPTED_KIND
    final = (info.error and not crashed) or info.finish not in (None, "tool_calls")
    return bool(answered_latest and final)
