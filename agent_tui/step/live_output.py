"""A running command's output as it arrives, for the views (the app's tool line, an
editor's tool call): the tail of it on the running part, published a few times a
second. Only the finished output is saved and sent to the model."""

from __future__ import annotations

import time
from collections.abc import Callable

from agent_tui.events import Event, PartUpdated
from agent_tui.records import ToolPart, ToolStateRunning
from agent_tui.redact import Redactor

LIVE_OUTPUT_CHARS = 4_000
"""The tail of the output shown while a command runs."""
LIVE_OUTPUT_INTERVAL = 0.25
"""Seconds between two updates of a running command's output."""


class LiveOutput:
    """Feeds output pieces (not yet redacted); publishes the running part with the
    redacted tail as `metadata["output"]`."""

    def __init__(self, part: ToolPart, publish: Callable[[Event], None], redact: Redactor) -> None:
        self.part = part
        self.publish = publish
        self.redact = redact
        self._tail = ""
        self._sent_at = 0.0

    def feed(self, text: str) -> None:
        self._tail = (self._tail + text)[-LIVE_OUTPUT_CHARS:]
        now = time.monotonic()
        if now - self._sent_at < LIVE_OUTPUT_INTERVAL:
            return
        self._sent_at = now
        state = self.part.state
        if not isinstance(state, ToolStateRunning):
            return
        # Whole lines only: a secret cut in half at the tail's start would not be found.
        tail = self._tail.partition("\n")[2] if len(self._tail) >= LIVE_OUTPUT_CHARS else self._tail
        shown, _ = self.redact.redact(tail)
        running = state.model_copy(update={"metadata": {**state.metadata, "output": shown}})
        self.publish(PartUpdated(part=self.part.model_copy(update={"state": running})))
