"""The headless view of engine events for `agent-tui run`: text to stdout, tools to stderr."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Callable
from typing import TextIO

from agent_tui import tool_lines
from agent_tui.events import (
    Event,
    MessageUpdated,
    Notice,
    PartUpdated,
    SessionError,
    SessionStatus,
    SessionUpdated,
)
from agent_tui.project.agents import PLAN_EXIT_TOOL
from agent_tui.records import (
    AssistantMessage,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
)


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


READER_GONE_EXIT = 128 + 13
"""The status of a process killed by SIGPIPE, as `yes | head` leaves it: agent-tui
catches the broken pipe instead, to stop the turn and close the database first."""


def silence(stream: TextIO) -> None:
    """Point `stream`'s descriptor at /dev/null: whatever is still buffered or written
    later goes nowhere instead of raising again (at the flush before exit, too)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no descriptor (a test's StringIO): nothing to redirect
        pass


class PipeView:
    """What the headless views share: when the reader of their output goes away, they
    stop writing, and `on_reader_gone` stops the turn (as Ctrl+C would, what streamed is
    kept) instead of raising inside the engine's event bus."""

    def __init__(self) -> None:
        self.out = sys.stdout
        self.err = sys.stderr
        self.reader_gone = False
        self.on_reader_gone: Callable[[], object] | None = None

    def _write(self, stream: TextIO, text: str) -> None:
        if self.reader_gone:
            return
        try:
            stream.write(text)
            stream.flush()
        except OSError as exc:
            # Whoever read our output closed it (`agent-tui run … | head`)?
            if not (isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE):
                raise
            self.reader_gone = True
            silence(self.out)
            silence(self.err)
            if self.on_reader_gone is not None:
                self.on_reader_gone()


class TextView(PipeView):
    """Streams assistant text as it arrives; one stderr line per finished tool call."""

    def __init__(self, *, show_summaries: bool = False) -> None:
        super().__init__()
        self.show_summaries = show_summaries
        """`compact` prints the summary; `run` keeps stdout for the answer."""
        self._at_line_start = True
        self._text_part = ""
        self._reported: set[str] = set()
        self._summaries: set[str] = set()
        self._children: set[str] = set()
        """Subagents' sessions: their text stays off stdout, their tool lines indented."""

    def _newline(self) -> None:
        if not self._at_line_start:
            self._write(self.out, "\n")
            self._at_line_start = True

    def _note(self, line: str) -> None:
        """A line on stderr, after the answer's line so far is ended."""
        self._newline()
        self._write(self.err, line + "\n")

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
                if part.id != self._text_part:  # another reply (a Stop hook's continuation)
                    self._text_part = part.id
                    self._newline()
                self._write(self.out, event.delta)
                self._at_line_start = event.delta.endswith("\n")
            elif isinstance(part, ToolPart) and part.state.status in ("completed", "error"):
                key = f"{part.id}:{part.state.status}"
                if key not in self._reported:
                    self._reported.add(key)
                    self._note(("  ↳ " if child else "") + tool_line(part))
                    plan = part.state.input.get("plan") if part.tool == PLAN_EXIT_TOOL else None
                    if isinstance(plan, str) and not child and part.state.status == "completed":
                        self._write(self.out, plan.strip() + "\n")  # `run --agent plan`
        elif isinstance(event, SessionStatus) and event.status in ("retrying", "compacting"):
            self._note(f"agent-tui: {event.message or 'Compacting the conversation…'}")
        elif isinstance(event, Notice):
            self._note(f"agent-tui: {event.message}")
        elif isinstance(event, SessionError):
            self._newline()

    def close(self) -> None:
        self._newline()


class JsonView(PipeView):
    """One JSON event per line on stdout, for scripts."""

    def __call__(self, event: Event) -> None:
        self._write(self.out, event.model_dump_json() + "\n")

    def close(self) -> None:
        pass
