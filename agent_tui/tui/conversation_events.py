"""Engine events -> the conversation: notices, status, the sidebar's figures, then the view.

Imported once the app has started (after its first frame): the event types are the
engine's pydantic models."""

from __future__ import annotations

import gc
from typing import TYPE_CHECKING

from agent_tui.context.stats import SessionStats
from agent_tui.events import (
    AgentSwitched,
    BackgroundCommandsChanged,
    CompactionUndone,
    Event,
    MessageUpdated,
    Notice,
    PartUpdated,
    PlanProposed,
    SessionCompacted,
    SessionError,
    SessionStatus,
    SessionUpdated,
    TodosUpdated,
    session_of,
)
from agent_tui.records import AssistantMessage, PatchPart, ToolPart

if TYPE_CHECKING:
    from agent_tui.tui.conversation import Conversation

IDLE_GC_THRESHOLDS = gc.get_threshold()
STREAMING_GC_THRESHOLDS = (10_000, 10, 100)
"""While a step streams: a young collection every 10,000 objects, full ones rarely.
100,000 made each young collection long enough to stall a frame (bench_tui's unthrottled
stream measures key to screen with both)."""
NOTIFY_SEVERITY = {"info": "information", "warning": "warning", "error": "error"}


async def apply_event(chat: Conversation, event: Event) -> None:
    session_id = session_of(event)
    shown = chat.session is not None and session_id == chat.session.id
    chat.side.follow(event)  # every session's state, on screen or not
    if isinstance(event, PlanProposed):  # put to the person once it is on screen, idle
        chat.propose_plan(event.session_id, event.plan)
    if isinstance(event, BackgroundCommandsChanged):  # kept for every session
        chat.background.follow(event)
    if isinstance(event, Notice) and (shown or session_id is None):  # None: for every session
        chat.notify(event.message, severity=NOTIFY_SEVERITY[event.level])  # type: ignore[arg-type]
    if not shown:
        return
    if isinstance(event, SessionError):
        chat.notify(event.message, title="Error", severity="error", timeout=10)
    elif isinstance(event, SessionStatus):
        if event.status == "idle":
            gc.set_threshold(*IDLE_GC_THRESHOLDS)
        chat.set_status(event.status, event.message)
    elif isinstance(event, SessionUpdated):
        chat.session = event.session
        chat.refresh_sidebar()
    elif isinstance(event, MessageUpdated):
        chat.show_welcome(False)
        if isinstance(event.info, AssistantMessage) and event.info.completed is None:
            # A step starts streaming: rarer full collections (they stalled frames
            # by hundreds of ms; see bench_tui). No freeze here: the view unmounts
            # old widgets as the session grows, and frozen garbage is never freed.
            # (What the start froze, imports and litellm, stays frozen: never unfrozen.)
            gc.set_threshold(*STREAMING_GC_THRESHOLDS)
        chat.stats.observe_message(event.info)
        if isinstance(event.info, AssistantMessage) and event.info.finish:
            chat.refresh_sidebar()
    elif isinstance(event, PartUpdated) and isinstance(event.part, (ToolPart, PatchPart)):
        before = len(chat.stats.files)
        chat.stats.observe_part(event.part)
        if len(chat.stats.files) != before:
            chat.refresh_sidebar()
    elif isinstance(event, AgentSwitched):
        chat.switch_agent(event.agent)
    elif isinstance(event, SessionCompacted):
        summary = await chat.engine.queries.message(event.summary_message_id)
        chat.stats.observe_message(summary)
        chat.refresh_sidebar()
    elif isinstance(event, TodosUpdated):
        chat.sidebar.show_todos(event.todos)
    elif isinstance(event, BackgroundCommandsChanged):
        chat.sidebar.show_background(event.commands)
    elif isinstance(event, CompactionUndone) and chat.session is not None:
        chat.stats = SessionStats.of(await chat.engine.queries.messages(chat.session.id))
        chat.refresh_sidebar()
    await chat.view.apply(event)
