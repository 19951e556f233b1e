"""One line above the prompt: working / compacting with elapsed time / retrying / hints,
and the quick permission mode when it is not the default."""

from __future__ import annotations

import time

from textual.timer import Timer
from textual.widgets import Static

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
TICK = 0.1
MODE_TEXT = {"auto-edits": "⏵⏵ auto-accept edits on (Shift+Tab to ask again)"}
"""What the status line says about a permission mode other than `ask`."""


class StatusLine(Static):
    DEFAULT_CSS = """
    StatusLine { height: 1; padding: 0 1; color: $text-muted; }
    StatusLine.-busy { color: $accent; }
    StatusLine.-compacting { color: $warning; text-style: bold; }
    StatusLine.-retrying { color: $warning; }
    StatusLine.-mode { color: $warning; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", markup=False, id=id)
        self.status = "idle"
        self.message: str | None = None
        self.hint: str | None = None
        self.mode = "ask"
        """The session's quick permission mode (ask / auto-edits)."""
        self._since = time.monotonic()
        self._frame = 0
        self._timer: Timer | None = None

    def set_status(self, status: str, message: str | None = None) -> None:
        if status != self.status:
            self._since = time.monotonic()
        self.status = status
        self.message = message
        for kind in ("busy", "compacting", "retrying"):
            self.set_class(status == kind, f"-{kind}")
        if status == "idle" and self._timer is not None:
            self._timer.stop()
            self._timer = None
        elif status != "idle" and self._timer is None:
            self._timer = self.set_interval(TICK, self._tick)
        self.refresh_text()

    def set_mode(self, mode: str) -> None:
        self.mode = mode
        self.set_class(mode != "ask", "-mode")
        self.refresh_text()

    def set_hint(self, hint: str | None) -> None:
        self.hint = hint
        self.refresh_text()

    def _tick(self) -> None:
        self._frame += 1
        self.refresh_text()

    def refresh_text(self) -> None:
        # One line whatever it says (height 1, the screen's width): no layout. With one,
        # every tick while busy laid out the whole screen, every mounted message included.
        self.update(self.render_text(), layout=False)

    def render_text(self) -> str:
        said = (self._activity(), MODE_TEXT.get(self.mode, ""))
        return self.hint or " · ".join(text for text in said if text)

    def _activity(self) -> str:
        elapsed = int(time.monotonic() - self._since)
        spin = SPINNER[self._frame % len(SPINNER)]
        if self.status == "compacting":
            return f"{spin} Compacting… {elapsed} s — Esc cancels; you can keep typing"
        if self.status == "retrying":
            return f"{spin} {self.message or 'Retrying…'} — Esc stops"
        if self.status == "busy" and self.message:  # another process runs the session
            queued = "messages sent now are queued; Esc stops waiting"
            return f"{spin} {self.message}… {elapsed} s — {queued}"
        if self.status == "busy":
            return f"{spin} Working… {elapsed} s — Esc interrupts; messages sent now are queued"
        return ""
