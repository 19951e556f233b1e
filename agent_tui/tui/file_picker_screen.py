"""The `@` file picker: the project's files (gitignore honoured), fuzzy filtered as the
person types; Enter or a click inserts the chosen path after the `@`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from agent_tui.session.mentions import FileIndex
from agent_tui.tui.choice_screen import ChoiceScreen

SEND = "\n"
"""What the picker answers to Enter with nothing matching: the message is sent as typed
(a picker with no match must not hold the message back)."""


class FilePickerScreen(ChoiceScreen):
    BINDINGS = [Binding("down", "move(1)", show=False), Binding("up", "move(-1)", show=False)]

    def __init__(self, root: Path, query: str = "") -> None:
        super().__init__()
        self.root = root
        self.initial_query = query
        """What was typed after the `@` before the picker opened: the first filter."""
        self.index: FileIndex | None = None
        self.indexed = asyncio.Event()
        """Set once the file list is built (tests wait on it)."""

    def content(self) -> ComposeResult:
        yield Label("Attach a file — type to filter, Enter to insert", id="picker-title")
        yield Input(
            self.initial_query, placeholder="path", id="picker-input", select_on_focus=False
        )
        yield OptionList(id="picker-files")

    def on_mount(self) -> None:
        self.query_one("#picker-input", Input).focus()
        self.run_worker(self._build(), exit_on_error=False)

    async def _build(self) -> None:
        # Walking a big tree takes a while: off the event loop, once per opening.
        self.index = await asyncio.to_thread(FileIndex.build, self.root)
        self.query_one("#picker-title", Label).update(
            f"Attach a file ({len(self.index.paths):,} files) — type to filter, Enter to insert"
        )
        self._show(self.query_one("#picker-input", Input).value)
        self.indexed.set()

    def _show(self, query: str) -> None:
        if self.index is None:
            return
        options = self.query_one("#picker-files", OptionList)
        options.clear_options()
        options.add_options([Option(path, id=path) for path in self.index.filter(query)])
        if options.option_count:
            options.highlighted = 0

    def on_input_changed(self, event: Input.Changed) -> None:
        self._show(event.value)

    def on_key(self, event: events.Key) -> None:
        """Keys that reach the screen before its input has the focus (sent while the
        picker was mounting) are typed into the filter, not lost."""
        field = self.query_one("#picker-input", Input)
        typed = event.character if event.is_printable else None
        if field.has_focus or not (typed or event.key == "backspace"):
            return
        field.focus()
        if typed:
            field.insert_text_at_cursor(typed)
        else:
            field.action_delete_left()
        event.stop()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        chosen = self.query_one("#picker-files", OptionList).highlighted_option
        # Nothing matches: Enter sends the message as typed.
        self.dismiss(SEND if chosen is None else chosen.id)

    def action_move(self, step: int) -> None:
        options = self.query_one("#picker-files", OptionList)
        if options.option_count:
            current = options.highlighted or 0
            options.highlighted = max(0, min(options.option_count - 1, current + step))
