"""Engine events of one session as ACP session updates: text and reasoning chunks, tool
calls, the todo list as a plan, the title, compaction, and usage after every step."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    Cost,
    PlanEntry,
    SessionInfoUpdate,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallStatus,
    Usage,
    UsageUpdate,
)

from agent_tui.acp import draft
from agent_tui.acp.tool_calls import META, text_content, tool_call_progress, tool_call_start
from agent_tui.context.stats import SessionStats
from agent_tui.events import (
    Event,
    MessageUpdated,
    Notice,
    PartUpdated,
    SessionCompacted,
    SessionStatus,
    SessionUpdated,
    TodosUpdated,
)
from agent_tui.records import (
    AssistantMessage,
    Message,
    ReasoningPart,
    TextPart,
    TodoItem,
    Tokens,
    ToolPart,
)

Update = Any
"""One of the SDK's session update models, or a `Deferred` producing some."""
Deferred = Callable[[], Awaitable[list[Any]]]
"""Updates that need a read first (sent in their place in the order)."""

COMPACT_TITLE = "Compact conversation"
PARAGRAPH = "\n\n"
"""Between two replies' texts that nothing else parts (a message queued mid-turn is
answered in the same loop): clients append chunks to the message they show. Sent as a
chunk of its own, marked in `_meta` (`run --attach` ends the line instead, as `run`)."""


def iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).isoformat()


def agent_text(text: str, message_id: str | None = None) -> AgentMessageChunk:
    """Agent text; `message_id` names the message it belongs to (a client forks there)."""
    return AgentMessageChunk(
        session_update="agent_message_chunk",
        content=TextContentBlock(type="text", text=text),
        message_id=message_id,
    )


def agent_thought(text: str, message_id: str | None = None) -> AgentThoughtChunk:
    return AgentThoughtChunk(
        session_update="agent_thought_chunk",
        content=TextContentBlock(type="text", text=text),
        message_id=message_id,
    )


def compaction_call(call_id: str, status: ToolCallStatus, **fields: Any) -> ToolCallStart:
    """A compaction as the "Compact conversation" tool call (to a client that did not
    declare `session.compaction`)."""
    return ToolCallStart(
        session_update="tool_call",
        tool_call_id=call_id,
        title=COMPACT_TITLE,
        kind="think",
        status=status,
        **fields,
    )


def compaction_ended(
    call_id: str, status: ToolCallStatus, text: str, raw_output: Any = None
) -> ToolCallProgress:
    """The end of a "Compact conversation" tool call: what it says, and its figures."""
    return ToolCallProgress(
        session_update="tool_call_update",
        tool_call_id=call_id,
        status=status,
        content=[text_content(text)],
        raw_output=raw_output,
    )


def plan_update(todos: list[TodoItem]) -> AgentPlanUpdate:
    entries = [
        PlanEntry(
            content=item.content,
            priority=item.priority,
            status="completed" if item.status == "cancelled" else item.status,
        )
        for item in todos
    ]
    return AgentPlanUpdate(session_update="plan", entries=entries)


def usage_update(stats: SessionStats, window: int) -> UsageUpdate:
    """What the sidebar shows: the tokens of the last finished step (or what a summary
    left), the context window, and the session's cost."""
    usage = stats.usage()
    return UsageUpdate(
        session_update="usage_update",
        used=usage.tokens,
        size=usage.limit or window,
        cost=Cost(amount=round(usage.cost, 6), currency="USD"),
    )


@dataclass
class SessionUpdates:
    """Turns one session's engine events into updates (and keeps the sidebar's figures)."""

    session_id: str
    directory: str
    load_message: Callable[[str], Awaitable[Message]]
    """Reads a message from the database (the summary, once a compaction is done)."""
    window: int = 0
    """The model's context window, until a finished step tells the real one."""
    stats: SessionStats = field(default_factory=SessionStats)
    _roles: dict[str, Message] = field(default_factory=dict)
    _sent: dict[str, int] = field(default_factory=dict)
    """Characters of each text or reasoning part already sent."""
    _calls: set[str] = field(default_factory=set)
    _text: tuple[str, str] | None = None
    """The reply whose text was the last thing shown, and how that text ended (None
    once a tool call or a thought came after it)."""
    compaction_updates: bool = False
    """The client declared `session.compaction`: compactions as `compaction_update`
    (acp/draft.py), not as a "Compact conversation" tool call."""
    cancelling: bool = False
    """The client cancelled the turn: a compaction that stops now was cancelled."""
    _compaction: str | None = None
    """The open "Compact conversation" tool call (or compaction), while one runs."""
    _compactions: int = 0
    _before: int = 0
    _summary_text: str = ""
    turn: list[Tokens] = field(default_factory=list)
    """The tokens of each step finished since the prompt began (PromptResponse.usage)."""
    _counted: set[str] = field(default_factory=set)

    def __call__(self, event: Event) -> list[Update]:
        if isinstance(event, SessionUpdated):
            return self._session(event)
        if isinstance(event, MessageUpdated):
            return self._message(event.info)
        if isinstance(event, PartUpdated):
            return self._part(event)
        if isinstance(event, TodosUpdated):
            return [plan_update(event.todos)]
        if isinstance(event, SessionStatus):
            return self._status(event)
        if isinstance(event, SessionCompacted):
            call, self._compaction = self._compaction, None
            return [lambda: self._compacted(call, event.summary_message_id)]
        if isinstance(event, Notice) and event.level != "info":
            note = agent_thought(f"agent-tui: {event.message}\n")
            note.field_meta = {META: {"notice": event.level}}
            return [note]
        return []

    def _session(self, event: SessionUpdated) -> list[Update]:
        session = event.session
        if session.id != self.session_id or not session.title:
            return []
        return [
            SessionInfoUpdate(
                session_update="session_info_update",
                title=session.title,
                updated_at=iso(session.updated),
            )
        ]

    def _message(self, info: Message) -> list[Update]:
        self._roles[info.id] = info
        self.stats.observe_message(info)
        if isinstance(info, AssistantMessage) and info.finish and info.id not in self._counted:
            self._counted.add(info.id)
            self.turn.append(info.tokens)
        if isinstance(info, AssistantMessage) and info.finish and not info.summary:
            return [usage_update(self.stats, self.window)]
        return []

    def _part(self, event: PartUpdated) -> list[Update]:
        part = event.part
        self.stats.observe_part(part)
        info = self._roles.get(part.message_id)
        if isinstance(part, ToolPart):
            self._text = None
            return [self.tool_call(part)]
        if isinstance(info, AssistantMessage) and info.summary and isinstance(part, TextPart):
            self._summary_text = part.text  # shown in the compaction's tool call
            return []
        if not isinstance(info, AssistantMessage):
            return []  # the person's own words: the client shows them
        if isinstance(part, TextPart) and not part.synthetic:
            return self._text_chunk(part)
        if isinstance(part, ReasoningPart):
            self._text = None
            return self._chunk(part, agent_thought)
        return []

    def _chunk(self, part: TextPart | ReasoningPart, make: Any) -> list[Update]:
        sent = self._sent.get(part.id, 0)
        if len(part.text) <= sent:
            return []
        self._sent[part.id] = len(part.text)
        return [make(part.text[sent:], part.message_id)]

    def _text_chunk(self, part: TextPart) -> list[Update]:
        """The reply's new text; a reply whose text follows another's with nothing
        between them starts with a paragraph break."""
        last, found = self._text, self._chunk(part, agent_text)
        if not found:
            return []
        self._text = (part.message_id, part.text[-len(PARAGRAPH) :])
        ending = "" if last is None else last[1]
        missing = PARAGRAPH[len(ending) - len(ending.rstrip("\n")) :]
        if last is None or last[0] == part.message_id or not missing:
            return found
        paragraph = agent_text(missing, part.message_id)
        paragraph.field_meta = {META: {"paragraph": True}}
        return [paragraph, *found]

    def tool_call(self, part: ToolPart) -> ToolCallStart | ToolCallProgress:
        if part.call_id in self._calls:
            return tool_call_progress(part, self.directory)
        self._calls.add(part.call_id)
        return tool_call_start(part, self.directory)

    def _status(self, event: SessionStatus) -> list[Update]:
        if event.status == "idle":  # the turn is over: the client's next reply is new
            self._text = None
        if event.status == "compacting" and self._compaction is None:
            self._compactions += 1
            self._compaction = f"compaction-{self.session_id}-{self._compactions}"
            self._before = self.stats.usage().tokens
            self.cancelling = False
            if self.compaction_updates:
                meta = {META: {"tokens_before": self._before}}
                return [draft.compaction_update(self._compaction, "in_progress", meta=meta)]
            raw, marked = {"tokens_before": self._before}, {META: {"status": "compacting"}}
            return [
                compaction_call(self._compaction, "in_progress", raw_input=raw, field_meta=marked)
            ]
        if event.status != "compacting" and self._compaction is not None:
            call, self._compaction = self._compaction, None
            if self.compaction_updates:
                status = "cancelled" if self.cancelling else "failed"
                error = None if self.cancelling else "The compaction did not finish."
                return [draft.compaction_update(call, status, error=error)]
            return [compaction_ended(call, "failed", "The compaction did not finish.")]
        return []

    async def _compacted(self, call: str | None, summary_id: str) -> list[Update]:
        """The summary is written: the compaction call completes with its figures and the
        summary, and the usage drops to what the summary left."""
        summary = await self.load_message(summary_id)
        self.stats.observe_message(summary)
        after = self.stats.usage().tokens
        text = f"Compacted: {self._before:,} → {after:,} tokens."
        if self._summary_text:
            text += f"\n\n{self._summary_text}"
        updates: list[Update] = []
        if call is not None and self.compaction_updates:
            meta = {META: {"tokens_before": self._before, "tokens_after": after}}
            summary = self._summary_text or text
            updates.append(draft.compaction_update(call, "completed", summary=summary, meta=meta))
        elif call is not None:
            raw = {"tokens_before": self._before, "tokens_after": after}
            updates.append(compaction_ended(call, "completed", text, raw))
        updates.append(usage_update(self.stats, self.window))
        return updates


def turn_usage(steps: list[Tokens]) -> Usage:
    """The tokens a prompt's steps (summaries included) used, for PromptResponse.usage."""
    read, write = sum(s.cache.read for s in steps), sum(s.cache.write for s in steps)
    output, reasoning = sum(s.output for s in steps), sum(s.reasoning for s in steps)
    prompt = sum(s.input for s in steps) + read + write
    return Usage(
        total_tokens=prompt + output + reasoning,
        input_tokens=prompt,
        output_tokens=output,
        thought_tokens=reasoning or None,
        cached_read_tokens=read,
        cached_write_tokens=write,
    )
