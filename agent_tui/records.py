"""Pydantic models of sessions, messages and their parts: what storage/ stores, events
carry and views draw. No storage code: a view may read them without reaching storage."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent_tui.ids import now_ms
from agent_tui.usage import CacheTokens, Tokens


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


__all__ = ["CacheTokens", "Tokens"]  # their home is agent_tui/usage.py; many read them here


class Worktree(_Model):
    """The git worktree a session works in (`-w NAME`, the EnterWorktree tool)."""

    path: str
    branch: str
    base: str
    """The commit it was made from: a commit beyond it is a change to keep."""
    checkout: str
    """The main checkout it belongs to (where `.worktreeinclude` was read)."""
    removed: bool = False
    """Removed when its session was left (no change, or the person said so)."""


class Session(_Model):
    id: str
    title: str = ""
    directory: str
    parent_id: str | None = None
    created: int = Field(default_factory=now_ms)
    updated: int = Field(default_factory=now_ms)
    # The compaction user message of the latest finished compaction, and the first
    # message of the verbatim tail kept before it; history is read from there on.
    compaction_id: str | None = None
    tail_start_id: str | None = None
    forked_from: str | None = None
    """The session this one was forked from (`fork`); `forked_at`: its last message copied."""
    forked_at: str | None = None
    worktree: Worktree | None = None
    """The git worktree made for this session (its `directory`), until it is removed."""

    @property
    def history_start(self) -> str | None:
        """The first message the model reads (None: all of them)."""
        if self.compaction_id is None:
            return None
        return min(self.compaction_id, self.tail_start_id or self.compaction_id)


# ---- messages -------------------------------------------------------------------------


class UserMessage(_Model):
    id: str
    session_id: str
    role: Literal["user"] = "user"
    created: int = Field(default_factory=now_ms)
    agent: str = "build"
    """The agent this message was sent to (project/agents.py): its prompt, tools, permissions,
    model and reasoning answer it. Rows from before agents existed load as build."""
    model: str = ""
    system: str | None = None
    queued: bool = False
    """Sent while the agent was working: it reaches the model as a reminder, then and in
    every later request (the cached prompt prefix must not change)."""
    undone: bool = False
    """The turn this message started was undone (`/undo`): hidden from the model and the
    view, kept in the database until a redo brings it back."""
    pinned: int | None = None
    """When the person pinned it (ms): its text is restated verbatim after every summary
    (context/pins.py, step/after_summary.py); None when not pinned."""


class ErrorInfo(_Model):
    kind: str
    message: str


class PinnedText(_Model):
    """A pinned message or tool result as a summary restates it (context/pins.py)."""

    id: str
    """The message (the person's or the agent's words) or tool part pinned."""
    kind: Literal["person", "agent", "tool"]
    label: str = ""
    """What it is, in a few words (a tool's name and input, the first words of a message)."""
    tool: str = ""
    call: str = ""
    """A tool result's call input, as JSON."""
    text: str = ""
    """The words, or the tool's result, verbatim (empty when it did not fit the budget)."""
    tokens: int = 0


class FileRecord(_Model):
    """One file in a summary's ledger (context/ledger.py): what the session did to it."""

    path: str
    """Relative to the session's directory when inside it, else absolute."""
    actions: list[Literal["read", "created", "edited", "deleted"]] = Field(default_factory=list)
    """In the order they first happened; of created / deleted the later one is last."""
    added: int = 0
    removed: int = 0
    """Lines added and removed over all the changes (from snapshots, else the tools)."""


class AssistantMessage(_Model):
    id: str
    session_id: str
    role: Literal["assistant"] = "assistant"
    created: int = Field(default_factory=now_ms)
    completed: int | None = None
    parent_id: str
    model: str = ""
    agent: str = "build"
    summary: bool = False
    finish: str | None = None
    error: ErrorInfo | None = None
    cost: float = 0.0
    tokens: Tokens = Field(default_factory=Tokens)
    context_limit: int = 0
    """The model's context window when this step ran (0 = unknown), for context %."""
    context_usable: int = 0
    """Tokens of the window usable by the prompt (0 = unknown)."""
    context_threshold: int = 0
    """Tokens at which automatic compaction fired when this step ran: `compaction.threshold`
    of usable (0 = unknown: a step saved before this field, read as usable)."""
    context_estimate: int | None = None
    """On a summary: the estimated size of the history it leaves (its context use)."""
    restated: list[str] = Field(default_factory=list)
    """On a summary: the person's own messages from the summarised span, newest first,
    restated verbatim right after the summary."""
    todos: str = ""
    """On a summary: the session's todo list when it was written (rendered), restated
    right after the summary."""
    plan: str = ""
    """On a summary: the newest plan proposed with plan_exit when it was written,
    restated right after the summary."""
    tail_start_id: str | None = None
    """On a summary: the first message of the verbatim tail it kept (for uncompact)."""
    followup_id: str | None = None
    """On a summary: the message the compaction added after it ("continue" or the replayed
    question), hidden again if the compaction is undone."""
    reverted: bool = False
    """On a summary: the compaction was undone; the history before it is back."""
    edited_summary: str | None = None
    """On a summary: the person's correction of its text (`/summary`, `agent-tui summary
    --edit`), which the model sees instead of the text the summariser wrote from the next
    step on; that text stays in the summary's parts. None: not edited."""
    edited_at: int | None = None
    """On a summary: when `edited_summary` was last saved (ms)."""
    undone: bool = False
    """The turn this step belongs to was undone (`/undo`): hidden from the model."""
    pinned: int | None = None
    """When the person pinned this step's text (ms); restated after every summary."""
    pins: list[PinnedText] = Field(default_factory=list)
    """On a summary: the pinned messages and tool results restated verbatim after it."""
    pins_left_out: list[PinnedText] = Field(default_factory=list)
    """On a summary: pins over `pin_budget`, named after it (never silently dropped)."""
    pin_budget: int = 0
    """On a summary: the tokens pins could take when it was written."""
    ledger: list[FileRecord] = Field(default_factory=list)
    """On a summary: every file read, created, edited or deleted in what it replaces,
    the earlier summaries' ledgers included; restated after it, written by code."""
    hook_context: str | None = None
    """On a summary: what the person's PostCompact hooks added, restated after it."""

    @property
    def in_force(self) -> bool:
        """A summary that finished and was not undone: the kind a compaction boundary rests on."""
        return self.summary and bool(self.finish) and not self.error and not self.reverted


Message = Annotated[UserMessage | AssistantMessage, Field(discriminator="role")]


# ---- parts ----------------------------------------------------------------------------


class _PartBase(_Model):
    id: str
    session_id: str
    message_id: str


class TextPart(_PartBase):
    type: Literal["text"] = "text"
    text: str = ""
    synthetic: bool = False
    ignored: bool = False
    """Kept but never sent to the model: a hidden follow-up, or in an assistant message
    text set aside when its attempt broke off and was retried."""
    start: int | None = None
    end: int | None = None


class ReasoningPart(_PartBase):
    type: Literal["reasoning"] = "reasoning"
    text: str = ""
    start: int | None = None
    end: int | None = None
    signature: str | None = None
    """Anthropic's signature of this thinking block: sent back with the exact text."""
    redacted: str | None = None
    """An Anthropic redacted_thinking block's opaque data (no readable text)."""
    ignored: bool = False
    """Set aside: streamed by an attempt that broke off and was retried; kept, never sent."""


class ToolTime(_Model):
    start: int | None = None
    end: int | None = None
    compacted: int | None = None


class ToolStatePending(_Model):
    status: Literal["pending"] = "pending"
    input: dict[str, Any] = Field(default_factory=dict)
    raw: str = ""


class ToolStateRunning(_Model):
    status: Literal["running"] = "running"
    input: dict[str, Any] = Field(default_factory=dict)
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    time: ToolTime = Field(default_factory=ToolTime)


class ImageAttachment(_Model):
    """An image a tool returned (tool/images.py): the bytes are a file under the data
    dir, so a part's JSON stays small; the model gets them at every request."""

    mime: str
    """image/png, image/jpeg, image/gif or image/webp."""
    path: str
    """The stored copy (`<data dir>/tool-output/image_<sha256>.<ext>`)."""
    name: str = ""
    """What the image is called on the tool line and in notes (e.g. the file read)."""
    bytes: int = 0
    width: int | None = None
    height: int | None = None
    sha256: str = ""


class ToolStateCompleted(_Model):
    status: Literal["completed"] = "completed"
    input: dict[str, Any] = Field(default_factory=dict)
    output: str = ""
    title: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    time: ToolTime = Field(default_factory=ToolTime)
    shortened: str | None = None
    """What the model sees instead of `output` after a compaction kept this step in the
    verbatim tail but it did not fit: a preview and the path of the full output."""
    attachments: list[ImageAttachment] = Field(default_factory=list)
    """Images the call returned (the read tool on an image); cleared with the output
    when pruned."""


class ToolStateError(_Model):
    status: Literal["error"] = "error"
    input: dict[str, Any] = Field(default_factory=dict)
    error: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    time: ToolTime = Field(default_factory=ToolTime)


ToolState = Annotated[
    ToolStatePending | ToolStateRunning | ToolStateCompleted | ToolStateError,
    Field(discriminator="status"),
]


class ToolPart(_PartBase):
    type: Literal["tool"] = "tool"
    call_id: str
    tool: str
    state: ToolState = Field(default_factory=ToolStatePending)
    ignored: bool = False
    """Set aside: started by an attempt that broke off and was retried; never sent."""
    pinned: int | None = None
    """When the person pinned this result (ms): restated verbatim after every summary,
    never pruned."""


class FilePart(_PartBase):
    type: Literal["file"] = "file"
    mime: str
    filename: str | None = None
    url: str


class CompactionPart(_PartBase):
    type: Literal["compaction"] = "compaction"
    auto: bool
    overflow: bool = False
    instructions: str | None = None
    up_to: str | None = None
    """Compact up to here: the summary ends with this message, all after it stays verbatim."""


class StepStartPart(_PartBase):
    type: Literal["step-start"] = "step-start"


class StepFinishPart(_PartBase):
    type: Literal["step-finish"] = "step-finish"
    reason: str
    tokens: Tokens = Field(default_factory=Tokens)
    cost: float = 0.0


class FileChange(_Model):
    """One file a step changed, as the snapshots saw it."""

    path: str
    status: Literal["added", "modified", "deleted"]
    added: int = 0
    removed: int = 0
    """Lines (0 for a binary file)."""


class PatchPart(_PartBase):
    type: Literal["patch"] = "patch"
    files: list[str] = Field(default_factory=list)
    """Paths relative to the session directory that the step changed."""
    changes: list[FileChange] = Field(default_factory=list)
    """The same files with their status and line counts, when snapshots work (the file
    ledger reads them; empty in parts saved before they were recorded)."""
    before: str | None = None
    """Snapshot tree hash of the working tree before the step ran its tools (for undo)."""
    after: str | None = None
    """Snapshot tree hash after the step's tools (for redo); None without snapshots."""


class SubtaskPart(_PartBase):
    type: Literal["subtask"] = "subtask"
    prompt: str
    description: str = ""
    agent: str = "general"


Part = Annotated[
    TextPart
    | ReasoningPart
    | ToolPart
    | FilePart
    | CompactionPart
    | StepStartPart
    | StepFinishPart
    | PatchPart
    | SubtaskPart,
    Field(discriminator="type"),
]


class MessageWithParts(_Model):
    info: Message
    parts: list[Part] = Field(default_factory=list)

    def typed_text(self) -> str:
        """What was written in it: its text parts, without the synthetic ones."""
        return "\n".join(
            p.text for p in self.parts if isinstance(p, TextPart) and not p.synthetic and p.text
        )


PreparedStatus = Literal["ready", "used", "discarded"]


class PreparedSummary(_Model):
    """A summary written in the background before compaction needed it (context/prepared.py):
    the span it covers, by message ids and a fingerprint of their content, and its text.
    Compaction applies it whole or discards it; it is never half-applied."""

    id: str
    session_id: str
    created: int = Field(default_factory=now_ms)
    boundary: str | None = None
    """The session's compaction boundary when it was prepared (None: never compacted)."""
    last_id: str
    """The newest message of the span it summarises; the steps after it stay verbatim."""
    messages: int
    """How many messages of the history (from its start) the span is."""
    fingerprint: str
    """A hash of the span's messages as the summariser read them (prune flags left out)."""
    model: str
    """The model that wrote it."""
    agent: str = ""
    """The agent of the turn it was prepared in."""
    text: str
    restated: list[str] = Field(default_factory=list)
    tokens: Tokens = Field(default_factory=Tokens)
    cost: float = 0.0
    seconds: float = 0.0
    """How long the summariser took (context/prepare_lead.py starts the next one by it)."""
    asked_at: int = 0
    """The prompt tokens of the step that started it (0: asked for a manual /compact)."""
    status: PreparedStatus = "ready"
    reason: str = ""
    """Why it was discarded (stale, too old, overtaken)."""
    used_by: str | None = None
    """The compaction request that applied it."""
    review: bool = False
    """Written for a manual /compact with `compaction.review` (the person applies it)."""
    edited: str | None = None
    """The person's edit in the review: what the model sees (`text` stays the original)."""


class SessionExport(_Model):
    """`agent-tui export`: the whole session, every message with its parts."""

    session: Session
    messages: list[MessageWithParts]
    prepared: list[PreparedSummary] = Field(default_factory=list)
    """Summaries prepared in the background (used, discarded or still ready)."""


class SessionSummary(_Model):
    """What `agent-tui sessions` shows beside a session, read in one pass."""

    messages: int = 0
    compactions: int = 0
    """Finished summary messages (completed compactions)."""
    cost: float = 0.0
    """Sum of the cost of every assistant message, its child sessions' (subagents) included."""
    subtasks_cost: float = 0.0
    """The part of `cost` spent in child sessions (the task tool's subagents)."""
    input_tokens: int = 0
    """Prompt tokens sent uncached, over the whole session."""
    cache_read: int = 0
    """Prompt tokens read from the provider's cache, over the whole session."""
    cache_write: int = 0
    """Prompt tokens written to the provider's cache, over the whole session."""
    last_assistant: AssistantMessage | None = None
    """The newest assistant message with a finish reason: its tokens give context %."""
    summaries_prepared: int = 0
    """Summaries written in the background (context/prepared.py), whatever became of them."""
    summaries_used: int = 0
    """Of those, applied by a compaction (their cost is the summary message's)."""
    summaries_discarded: int = 0
    """Of those, dropped as stale, too old or overtaken (their cost is in `cost`)."""


# ---- todos ----------------------------------------------------------------------------

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled"]
TodoPriority = Literal["high", "medium", "low"]


class TodoItem(_Model):
    """One entry of a session's todo list (written by the todowrite tool)."""

    id: str
    content: str
    status: TodoStatus = "pending"
    priority: TodoPriority = "medium"
