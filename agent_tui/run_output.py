"""What `agent-tui run` prints, whether the turn runs here or on a server: the answer's
text on stdout, one stderr line per finished tool call and per note, the session's id
last. One printer fed two ways: `cli/headless.py` from the engine's events, and
`attach/render.py` from a server's ACP updates. A leaf without pydantic, so the attach
client stays light."""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable
from typing import Any, TextIO

from agent_tui.tool_lines import PLAN_EXIT_TOOL, tool_line

START_HINT = 'Start one with: agent-tui run "..." (or list all sessions with: agent-tui sessions).'
"""After "No session to continue in DIR." (`run --continue`, here or attached)."""
READER_GONE_EXIT = 128 + 13
"""The status of a process killed by SIGPIPE, as `yes | head` leaves it: agent-tui
catches the broken pipe instead, to stop the turn and close the database first."""


def silence(stream: TextIO) -> None:
    """Point `stream`'s descriptor at /dev/null: whatever is still buffered or written
    later goes nowhere instead of raising again (at the flush before exit, too)."""
    with contextlib.suppress(OSError, ValueError):  # no descriptor (a test's StringIO)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


class PipeView:
    """When the reader of the output goes away, stop writing, and `on_reader_gone` stops
    the turn (as Ctrl+C would, what streamed is kept) instead of raising inside whatever
    delivers the events."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        self.err = err or sys.stderr
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

    def line(self, text: str) -> None:
        """One line on stdout (`--format json`: an event)."""
        self._write(self.out, text + "\n")

    def ended(self, session_id: str) -> None:
        """The turn is over (`--format json` said it all)."""

    def close(self) -> None:
        pass


class TextView(PipeView):
    """The answer streamed as it arrives; a finished tool call, once, as a stderr line."""

    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        super().__init__(out, err)
        self._at_line_start = True
        self.reported: set[str] = set()
        """The finished calls printed, by call id and status."""

    def newline(self) -> None:
        if not self._at_line_start:
            self._write(self.out, "\n")
            self._at_line_start = True

    def note(self, line: str) -> None:
        """A line on stderr, after the answer's line so far is ended."""
        self.newline()
        self._write(self.err, line + "\n")

    def text(self, delta: str) -> None:
        self._write(self.out, delta)
        self._at_line_start = delta.endswith("\n")

    def tool(
        self, call_id: str, tool: str, data: dict[str, Any], status: str, **details: Any
    ) -> None:
        """A call that ended (`status` completed or error): its line (`details`: the
        error, metadata and images of `tool_line`), indented for a subagent's (`child`);
        the plan agent's plan is the answer (`run --agent plan`)."""
        child = details.pop("child", False)
        if f"{call_id}:{status}" in self.reported:
            return
        self.reported.add(f"{call_id}:{status}")
        self.note(("  ↳ " if child else "") + tool_line(tool, data, status, **details))
        plan = data.get("plan") if tool == PLAN_EXIT_TOOL else None
        if isinstance(plan, str) and not child and status == "completed":
            self._write(self.out, plan.strip() + "\n")

    def ended(self, session_id: str) -> None:
        """The turn is over: which session it ran in (`run -s ID` continues it)."""
        self.note(f"session {session_id}")

    def close(self) -> None:
        self.newline()


def exit_code(outcome: str, error: str | None = None, code: int = 1) -> int:
    """How a turn ended (done, aborted or error), said on stderr as its exit code."""
    if outcome == "aborted":
        print("agent-tui: interrupted; what was streamed is saved.", file=sys.stderr)
        return 130
    if outcome == "error":
        print(f"agent-tui: {error or 'the run failed.'}", file=sys.stderr)
        return code
    return 0
