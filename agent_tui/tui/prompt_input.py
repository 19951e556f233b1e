"""The multi-line prompt: Enter sends, Shift+Enter / Ctrl+J add a line, Up/Down history,
Tab in an empty prompt switches agents, Shift+Tab the permission mode; its border names
the agent the next message goes to."""

from __future__ import annotations

import os
from dataclasses import dataclass

from textual import events
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import TextArea
from textual.widgets.text_area import Location

from agent_tui.command import catalog
from agent_tui.command.core import APP, Command

NEWLINE_KEYS = {"shift+enter", "ctrl+j", "newline"}
PLACEHOLDER = "Message the agent — Enter sends, Ctrl+J new line, / for commands"


class PromptInput(TextArea):
    DEFAULT_CSS = """
    PromptInput {
        height: auto;
        min-height: 3;
        max-height: 10;
        border: round $primary;
        padding: 0 1;
    }
    PromptInput:focus { border: round $accent; }
    PromptInput { border-title-align: right; border-title-color: $text-muted; }
    PromptInput.-plan, PromptInput.-plan:focus {
        border: round $warning; border-title-color: $warning;
    }
    PromptInput.-custom-agent, PromptInput.-custom-agent:focus {
        border: round $secondary; border-title-color: $secondary;
    }
    """

    @dataclass
    class Submitted(Message):
        text: str

    @dataclass
    class LeaderKey(Message):
        """A key pressed after the leader key; it is not typed into the prompt."""

        key: str

    @dataclass
    class MentionStarted(Message):
        """`@` typed at the start of a word: the app opens the file picker, if the mention
        is still being typed when this arrives (`mention_word`)."""

        token: int

    class AgentCycle(Message):
        """Tab in an empty prompt: the next primary agent."""

    class PermissionModeCycle(Message):
        """Shift+Tab: ask <-> auto-accept edits."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(
            id=id,
            soft_wrap=True,
            show_line_numbers=False,
            placeholder=PLACEHOLDER,
            highlight_cursor_line=False,
        )
        self.leader_active = False
        self.sent_history: list[str] = []
        self._history_index: int | None = None
        self._draft = ""
        self._commands: tuple[Command, ...] | None = None
        self._mentions = 0
        self._mention: tuple[int, Location] | None = None
        """The `@` being typed: its MentionStarted token and where the `@` is. Cleared
        when the prompt is sent, so a picker asked for before Enter never opens after."""
        self._themed: object = None
        """The TextArea theme whose colours (text, cursor, selection) were read from the
        CSS; None after the styles changed."""

    def render_lines(self, crop: Region) -> list[Strip]:
        """TextArea reads its colours from the CSS again at every render (half of a
        typed key's frame); here only after the styles changed (`notify_style_update`:
        focus, classes, the theme)."""
        theme = self._theme
        if theme is not None and self._themed is not theme:
            theme.apply_css(self)
            self._themed = theme
        return super(TextArea, self).render_lines(crop)

    def notify_style_update(self) -> None:
        self._themed = None
        super().notify_style_update()

    @property
    def commands(self) -> tuple[Command, ...]:
        """The slash commands it completes: the built-ins, then the custom ones. The
        built-ins are read when first asked for: importing every command module is no
        part of the first frame."""
        if self._commands is None:
            self._commands = catalog.offered_in(APP)
        return self._commands

    @commands.setter
    def commands(self, commands: tuple[Command, ...]) -> None:
        self._commands = commands

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        handled = True
        if self.leader_active:
            self.leader_active = False
            self.post_message(self.LeaderKey(key))
        elif key == "enter":
            self.submit()
        elif key in NEWLINE_KEYS:
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
        elif key == "tab" and self.completions():
            self.complete()
        elif key == "tab" and not self.text.strip():
            self.post_message(self.AgentCycle())
        elif key == "shift+tab":
            self.post_message(self.PermissionModeCycle())
        elif key == "up" and self.cursor_location[0] == 0 and self.sent_history:
            self.recall(-1)
        elif key == "down" and self.cursor_location[0] == self.document.line_count - 1:
            handled = self.recall(1)
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        starts_mention = event.character == "@" and self._at_word_start()
        await super()._on_key(event)
        if starts_mention:
            row, column = self.cursor_location
            self._mentions += 1
            self._mention = (self._mentions, (row, column - 1))
            self.post_message(self.MentionStarted(self._mentions))

    def mention_word(self, token: int) -> tuple[str, Location, Location] | None:
        """The word typed after the `@` of mention `token` so far, and where it starts and
        ends, while the cursor is still in it; None once it was sent, erased, finished
        with a space, or another `@` started: its picker must not open (keys typed
        meanwhile went to the prompt, where they belong)."""
        if self._mention is None or self._mention[0] != token:
            return None
        row, column = self._mention[1]
        line = self.document.get_line(row) if row < self.document.line_count else ""
        cursor_row, cursor_column = self.cursor_location
        if line[column : column + 1] != "@" or cursor_row != row or cursor_column <= column:
            return None
        word = line[column + 1 : cursor_column]
        if any(ch.isspace() for ch in word):
            return None
        return word, (row, column + 1), (row, cursor_column)

    def show_agent(self, name: str) -> None:
        """The agent the next message goes to: named on the border, coloured unless build."""
        self.border_title = f"{name} · Tab switches"
        self.set_class(name == "plan", "-plan")
        self.set_class(name not in ("build", "plan"), "-custom-agent")

    def _at_word_start(self) -> bool:
        row, column = self.cursor_location
        before = self.document.get_line(row)[:column]
        return not before or before[-1].isspace()

    # ---- history ----------------------------------------------------------------------

    def remember(self, text: str) -> None:
        if text.strip() and (not self.sent_history or self.sent_history[-1] != text):
            self.sent_history.append(text)
        self._history_index = None

    def recall(self, step: int) -> bool:
        """Move through history; True if the prompt changed."""
        if self._history_index is None:
            if step > 0:
                return False
            self._draft = self.text
            index = len(self.sent_history) - 1
        else:
            index = self._history_index + step
        if index >= len(self.sent_history):
            self._history_index = None
            self.load_text(self._draft)
        elif index >= 0:
            self._history_index = index
            self.load_text(self.sent_history[index])
        else:
            return False
        self.move_cursor(self.document.end)
        return True

    def submit(self) -> None:
        """Send what is typed (Enter). Cleared now, not when the app gets the message:
        keys typed meanwhile (fast typing, a paste, a script) start the next message
        instead of joining this."""
        text = self.text
        self._mention = None
        if text.strip():
            self.clear()
        self.post_message(self.Submitted(text))

    # ---- completion -------------------------------------------------------------------

    def completions(self) -> list[Command]:
        text = self.text
        if not text.startswith("/") or any(ch.isspace() for ch in text):
            return []
        return catalog.matching(text[1:], self.commands)

    def complete(self) -> None:
        """Complete a unique (or common) slash command prefix (Tab, with completions)."""
        found = self.completions()
        common = os.path.commonprefix([c.name for c in found])  # noqa: RUF071 (not paths)
        target = f"/{common}" + (" " if len(found) == 1 else "")
        if target != self.text:
            self.load_text(target)
            self.move_cursor(self.document.end)
