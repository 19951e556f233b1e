"""One line per tool call with its status; expands to the input and output (Enter or a
click on it). ctrl+o on it opens its actions: pin the result, open a subagent's session."""

from __future__ import annotations

import json
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.binding import Binding
from textual.markup import escape
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Collapsible, Static

from agent_tui.records import ToolPart, ToolStateCompleted, ToolStateError
from agent_tui.tool_lines import failed_exit, image_mark, short_input, shown_status
from agent_tui.tui.message_actions_screen import MENU_KEY, MessageActionsScreen
from agent_tui.tui.status_line import SPINNER

SPINNER_INTERVAL = 0.1
OUTPUT_PREVIEW_LINES = 200
"""Lines of output shown when expanded; the rest is in the database or the saved file."""
STATUS_ICON = {"pending": "○", "completed": "✓", "error": "✗"}


def tool_title(part: ToolPart, frame: int = 0, background_key: str | None = None) -> str:
    """The one-line summary: icon, tool, short input, status and marks (markup-escaped);
    a running bash command names `background_key`, which sends it to the background."""
    state = part.state
    status = shown_status(part)
    icon = SPINNER[frame % len(SPINNER)] if status == "running" else STATUS_ICON[status]
    line = f"{icon} {part.tool} {short_input(part.state.input)}".rstrip()
    marks: list[str] = []
    if isinstance(state, ToolStateError):
        first = (state.error.splitlines() or [""])[0]
        marks.append(f"error: {first[:80]}")
    elif isinstance(state, ToolStateCompleted):
        marks += [
            image_mark(image.model_dump(), short_input(part.state.input))
            for image in state.attachments
        ]
        if state.time.compacted:
            marks.append("pruned")
        if state.metadata.get("truncated"):
            marks.append(f"truncated, full output: {state.metadata.get('output_path')}")
        if (child := child_session(part)) is not None:  # a subagent's child session
            marks.append(f"session {child}")
        if (exit_code := failed_exit(state.input, state.metadata)) is not None:
            marks.append(f"exit code {exit_code}")
    elif state.status == "running":
        hint = background_key and part.tool == "bash"
        marks.append(f"running · {background_key}: to the background" if hint else "running")
    if part.pinned is not None:
        marks.append("📌 pinned")
    if marks:
        line += " — " + "; ".join(marks)
    return escape(line)


def tool_body(part: ToolPart) -> str:
    state = part.state
    lines = ["Input:", json.dumps(state.input, indent=2, ensure_ascii=False)]
    if isinstance(state, ToolStateCompleted):
        pruned = " (pruned from the model's context, kept here)" if state.time.compacted else ""
        lines += ["", f"Output{pruned}:"]
        output = state.output.splitlines()
        lines += output[:OUTPUT_PREVIEW_LINES]
        if len(output) > OUTPUT_PREVIEW_LINES:
            lines.append(f"… {len(output) - OUTPUT_PREVIEW_LINES} more lines")
    elif isinstance(state, ToolStateError):
        lines += ["", "Error:", state.error]
    if (child := child_session(part)) is not None:
        lines += ["", f"Subagent session {child}: press o to open it."]
    return "\n".join(lines)


def child_session(part: ToolPart) -> str | None:
    """The child session a task call ran (a subagent), if any."""
    state = part.state
    found = state.metadata.get("session_id") if isinstance(state, ToolStateCompleted) else None
    return found if isinstance(found, str) else None


class ToolLine(Collapsible):
    DEFAULT_CSS = """
    ToolLine {
        border: none;
        padding: 0;
        margin: 0;
        background: transparent;
    }
    ToolLine > Contents { padding: 0 0 0 2; color: $text-muted; }
    ToolLine.-error CollapsibleTitle { color: $error; }
    ToolLine.-running CollapsibleTitle { color: $warning; }
    ToolLine.-completed CollapsibleTitle { color: $success; }
    """
    BINDINGS = [Binding(MENU_KEY, "actions", "Actions on this tool call")]

    @dataclass
    class OpenSession(Message):
        """Show the child session of a task call (a subagent)."""

        session_id: str

    @dataclass
    class TogglePin(Message):
        """Pin the result (or unpin it): restated verbatim after every compaction."""

        part: ToolPart

    def __init__(self, part: ToolPart, *, id: str | None = None) -> None:
        self.part = part
        self._body: Static | None = None
        self._frame = 0
        self._spinner: Timer | None = None
        super().__init__(
            title=tool_title(part), collapsed=True, collapsed_symbol="›", expanded_symbol="⌄", id=id
        )
        self._set_status_class()

    def compose(self) -> ComposeResult:
        """The title only: the body (Collapsible's Contents) is made when first expanded,
        so a page of tool lines mounts, styles and lays out none of it."""
        yield self._title

    def on_mount(self) -> None:
        self._sync_spinner()

    def show(self, part: ToolPart) -> None:
        self.part = part
        self.title = tool_title(part, self._frame, self._background_key())
        self._set_status_class()
        self._sync_spinner()
        if self._body is not None:
            self._body.update(tool_body(part))

    def _set_status_class(self) -> None:
        shown = shown_status(self.part)
        for status in ("pending", "running", "completed", "error"):
            self.set_class(shown == status, f"-{status}")

    def _sync_spinner(self) -> None:
        running = self.part.state.status == "running"
        if running and self._spinner is None and self.is_mounted:
            self._spinner = self.set_interval(SPINNER_INTERVAL, self._spin)
        elif not running and self._spinner is not None:
            self._spinner.stop()
            self._spinner = None

    def _spin(self) -> None:
        self._frame += 1
        self.title = tool_title(self.part, self._frame, self._background_key())

    def _background_key(self) -> str | None:
        """The app's key that sends a running command to the background (keybinds)."""
        return getattr(getattr(self.app, "keys", None), "background", None)

    def action_actions(self) -> None:
        """Its menu: expand or collapse, pin or unpin the result, open a subagent's session."""
        actions = [("toggle", "Collapse" if not self.collapsed else "Expand")]
        if self.part.state.status in ("completed", "error"):
            pinned = self.part.pinned is not None
            actions.append(("pin", "Unpin the result" if pinned else "Pin the result"))
        if child_session(self.part) is not None:
            actions.append(("open", "Open the subagent's session"))
        if isinstance(self.part.state, ToolStateCompleted):
            actions.append(("copy", "Copy the output"))
        self.app.push_screen(MessageActionsScreen(str(self.title), actions), self._chosen)

    def _chosen(self, action: str | None) -> None:
        if action == "toggle":
            self.collapsed = not self.collapsed
        elif action == "pin":
            self.post_message(self.TogglePin(self.part))
        elif action == "open" and (child := child_session(self.part)) is not None:
            self.post_message(self.OpenSession(child))
        elif action == "copy" and isinstance(self.part.state, ToolStateCompleted):
            self.app.copy_to_clipboard(self.part.state.output)  # the terminal's (OSC 52)
            self.notify("Copied the output.")

    def on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        """The body is built on first expansion: most tool lines are never opened."""
        if event.collapsible is self and self._body is None:
            self._body = Static(tool_body(self.part), markup=False)
            self.mount(Collapsible.Contents(self._body))
