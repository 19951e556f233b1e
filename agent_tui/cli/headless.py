"""The engine's events printed as `agent-tui run` prints them (run_output.py): text to
stdout, tools and notes to stderr, or one JSON event per line."""

from __future__ import annotations

from agent_tui import run_output
from agent_tui.events import (
    Event,
    MessageUpdated,
    Notice,
    PartUpdated,
    SessionError,
    SessionStatus,
    SessionUpdated,
)
from agent_tui.records import (
    AssistantMessage,
    Part,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
)


class TextView(run_output.TextView):
    """Assistant text as it arrives; one stderr line per finished tool call."""

    def __init__(self, *, show_summaries: bool = False) -> None:
        super().__init__()
        self.show_summaries = show_summaries
        """`compact` prints the summary; `run` keeps stdout for the answer."""
        self._text_part = ""
        self._summaries: set[str] = set()
        self._children: set[str] = set()
        """Subagents' sessions: their text stays off stdout, their tool lines indented."""

    def __call__(self, event: Event) -> None:
        if isinstance(event, SessionUpdated) and event.session.parent_id:
            self._children.add(event.session.id)
        elif isinstance(event, MessageUpdated):
            if isinstance(event.info, AssistantMessage) and event.info.summary:
                self._summaries.add(event.info.id)
        elif isinstance(event, PartUpdated):
            self._part(event.part, event.delta)
        elif isinstance(event, SessionStatus) and event.status in ("retrying", "compacting"):
            self.note(f"agent-tui: {event.message or 'Compacting the conversation…'}")
        elif isinstance(event, Notice):
            self.note(f"agent-tui: {event.message}")
        elif isinstance(event, SessionError):
            self.newline()

    def _part(self, part: Part, delta: str | None) -> None:
        child = part.session_id in self._children
        if isinstance(part, TextPart) and delta and not part.synthetic and not child:
            if part.message_id in self._summaries and not self.show_summaries:
                return
            if part.id != self._text_part:  # another reply (a Stop hook's continuation)
                self._text_part = part.id
                self.newline()
            self.text(delta)
        elif isinstance(part, ToolPart) and part.state.status in ("completed", "error"):
            state = part.state
            completed = isinstance(state, ToolStateCompleted)
            self.tool(
                part.id,
                part.tool,
                state.input,
                state.status,
                error=state.error if isinstance(state, ToolStateError) else None,
                metadata=state.metadata if completed else None,
                images=[a.model_dump() for a in state.attachments] if completed else (),
                child=child,
            )


class JsonView(run_output.PipeView):
    """One JSON event per line on stdout, for scripts."""

    def __call__(self, event: Event) -> None:
        self.line(event.model_dump_json())
