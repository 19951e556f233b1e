"""Engine events: everything a view (TUI or headless CLI) shows arrives as one of these."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from agent_tui.records import Message, Part, Session, TodoItem


class PartUpdated(BaseModel):
    type: Literal["part.updated"] = "part.updated"
    part: Part
    delta: str | None = None
    """The text appended by this update, when streaming."""


class MessageUpdated(BaseModel):
    type: Literal["message.updated"] = "message.updated"
    info: Message


class SessionUpdated(BaseModel):
    type: Literal["session.updated"] = "session.updated"
    session: Session


SessionStatusKind = Literal["idle", "busy", "compacting", "retrying"]


class SessionStatus(BaseModel):
    type: Literal["session.status"] = "session.status"
    session_id: str
    status: SessionStatusKind
    attempt: int | None = None
    max_attempts: int | None = None
    wait: float | None = None
    message: str | None = None


class SessionError(BaseModel):
    type: Literal["session.error"] = "session.error"
    session_id: str
    kind: str
    message: str


class SessionCompacted(BaseModel):
    type: Literal["session.compacted"] = "session.compacted"
    session_id: str
    auto: bool
    summary_message_id: str


class CompactionUndone(BaseModel):
    """The newest compaction was taken back (`uncompact`): its summary is reverted."""

    type: Literal["session.uncompacted"] = "session.uncompacted"
    session_id: str
    summary_message_id: str


class TodosUpdated(BaseModel):
    """The session's todo list was replaced (todowrite)."""

    type: Literal["todos.updated"] = "todos.updated"
    session_id: str
    todos: list[TodoItem]


class Notice(BaseModel):
    """A one-line note for the person (e.g. 'context size unknown for this model')."""

    type: Literal["notice"] = "notice"
    session_id: str | None = None
    level: Literal["info", "warning", "error"] = "info"
    message: str


class PlanProposed(BaseModel):
    """The plan agent proposed a plan (plan_exit) and its turn is over: the views put it
    to the person, whose answer is `Engine.answer_plan`."""

    type: Literal["plan.proposed"] = "plan.proposed"
    session_id: str
    plan: str


class AgentSwitched(BaseModel):
    """The session goes on with another primary agent (an answered plan)."""

    type: Literal["agent.switched"] = "agent.switched"
    session_id: str
    agent: str


BackgroundStatus = Literal["running", "exited", "stopped", "failed"]
"""exited: ended with 0; failed: ended otherwise (a code, a signal, or it never started);
stopped: by the model (task_stop), the person, or its session ending."""


class BackgroundCommand(BaseModel):
    """A command the model left running in the background (bash `run_in_background`)."""

    id: str
    command: str
    description: str | None = None
    started: int
    """When it started (ms since the epoch)."""
    ended: int | None = None
    status: BackgroundStatus = "running"
    exit_code: int | None = None
    last_line: str = ""
    """The newest line it printed (redacted), for a list of them."""
    output_path: str
    """Where its whole output is saved (capped like any saved output)."""


class BackgroundCommandsChanged(BaseModel):
    """A session's background commands changed: one started, printed a new last line,
    exited or was stopped. Carries them all, newest last."""

    type: Literal["background.changed"] = "background.changed"
    session_id: str
    commands: list[BackgroundCommand]


Event = (
    PartUpdated
    | MessageUpdated
    | SessionUpdated
    | SessionStatus
    | SessionError
    | SessionCompacted
    | CompactionUndone
    | TodosUpdated
    | Notice
    | PlanProposed
    | AgentSwitched
    | BackgroundCommandsChanged
)


def session_of(event: Event) -> str | None:
    """The session an event belongs to (None: a notice for every session)."""
    if isinstance(event, PartUpdated):
        return event.part.session_id
    if isinstance(event, MessageUpdated):
        return event.info.session_id
    if isinstance(event, SessionUpdated):
        return event.session.id
    return event.session_id
