"""The headless view of engine events for `agent-tui run`: text to stdout, tools to stderr."""

from __future__ import annotations

import sys
from typing import TextIO

from agent_tui import tool_lines
from agent_tui.agents import PLAN_EXIT_TOOL
from agent_tui.events import (
    Event,
    MessageUpdated,
    Notice,
    PartUpdated,
    SessionError,
    SessionStatus,
    SessionUpdated,
)
from agent_tui.storage.models import (
    AssistantMessage,
    ImageAttachment,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
)


def short_input(part: ToolPart) -> str:
    return tool_lines.short_input(part.state.input)


def image_mark(image: ImageAttachment, shown: str = "") -> str:
    return tool_lines.image_mark(image.model_dump(), shown)


def tool_line(part: ToolPart) -> str:
    state = part.state
    return tool_lines.tool_line(
        part.tool,
        state.input,
        state.status,
        error=state.error if isinstance(state, ToolStateError) else None,
        metadata=state.metadata if isinstance(state, ToolStateCompleted) else None,
        images=[a.model_dump() for a in state.attachments]
        if isinstance(state, ToolStateCompleted)
        else (),
    )


class TextView:
    """Streams assistant text as it arrives; one stderr line per finished tool call."""

    def __init__(
        self, out: TextIO | None = None, err: TextIO | None = None, *, show_summaries: bool = False
    ) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.show_summaries = show_summaries
        """`compact` prints the summary; `run` keeps stdout for the answer."""
        self._at_line_start = True
        self._reported: set[str] = set()
        self._summaries: set[str] = set()
        self._children: set[str] = set()
        """Subagents' sessions: their text stays off stdout, their tool lines indented."""

    def _newline(self) -> None:
        if not self._at_line_start:
            self.out.write("\n")
            self.out.flush()
            self._at_line_start = True

    def __call__(self, event: Event) -> None:
        if isinstance(event, SessionUpdated) and event.session.parent_id:
            self._children.add(event.session.id)
        elif isinstance(event, MessageUpdated):
            if isinstance(event.info, AssistantMessage) and event.info.summary:
                self._summaries.add(event.info.id)
        elif isinstance(event, PartUpdated):
            part = event.part
            child = part.session_id in self._children
            hidden = child or (part.message_id in self._summaries and not self.show_summaries)
            if isinstance(part, TextPart) and event.delta and not part.synthetic and not hidden:
                self.out.write(event.delta)
                self.out.flush()
                self._at_line_start = event.delta.endswith("\n")
            elif isinstance(part, ToolPart) and isinstance(
                part.state, (ToolStateCompleted, ToolStateError)
            ):
                key = f"{part.id}:{part.state.status}"
                if key not in self._reported:
                    self._reported.add(key)
                    self._newline()
                    indent = "  ↳ " if child else ""
                    print(indent + tool_line(part), file=self.err, flush=True)
                    plan = part.state.input.get("plan") if part.tool == PLAN_EXIT_TOOL else None
                    if isinstance(plan, str) and not child and part.state.status == "completed":
                        self.out.write(plan.strip() + "\n")  # `run --agent plan`: the answer
                        self.out.flush()
        elif isinstance(event, SessionStatus) and event.status in ("retrying", "compacting"):
            self._newline()
            text = event.message or "Compacting the conversation…"
            print(f"agent-tui: {text}", file=self.err, flush=True)
        elif isinstance(event, Notice):
            self._newline()
            print(f"agent-tui: {event.message}", file=self.err, flush=True)
        elif isinstance(event, SessionError):
            self._newline()

    def close(self) -> None:
        self._newline()


class JsonView:
    """One JSON event per line on stdout, for scripts."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def __call__(self, event: Event) -> None:
        self.out.write(event.model_dump_json() + "\n")
        self.out.flush()

    def close(self) -> None:
        pass
