"""Engine events -> Textual messages, at most one batch per frame however fast they come.

The bus calls subscribers synchronously on the event loop. Posting one Textual message
per token would make the app's queue the bottleneck at thousands of tokens a second, and
even one batch per event-loop turn re-renders the stream far more often than the screen
can show it, so input waits behind renders. Events are queued here; the first event after
a quiet spell is posted at once (no added latency for a key's echo or a tool line), later
ones wait for the next frame slot, `FRAME` seconds after the previous batch. Consecutive
updates of the same streaming part collapse into the newest one: views render text parts
from the part's full text, never from the deltas, so nothing is lost by collapsing them.

Keys win over the stream: batches are spaced so that applying and drawing them takes at
most DRAW_SHARE of the time, TYPING_SHARE while the person types (a fast stream's frames
lay out and redraw the whole view, tens of milliseconds each), and a key holds the next
batch back one frame so that the key's own frame draws it alone (`hold`, `deferred`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.message import Message
from textual.message_pump import MessagePump

from agent_tui.events import Event, PartUpdated

FRAME = 1 / 30
"""Seconds between two batches at least: a streamed reply is re-rendered at most 30 times
a second."""
DRAW_SHARE = 0.4
"""The share of the time a fast stream's batches may take to apply and draw; the rest is
for keys and for reading the stream. A batch whose frame took 20 ms is followed by the
next one 50 ms later."""
TYPING_SHARE = 0.2
"""The share while the person types (a key within TYPING_WINDOW): a key that arrives
while a batch is drawn waits for it, so fewer of them wait (docs/performance.md), for a
stream drawn in larger steps meanwhile."""
TYPING_WINDOW = 1.0
MAX_FRAME = 0.125
"""Seconds between two batches at most, however slow their frames (8 a second)."""


class EventPump:
    """Subscribes to an engine bus and forwards batches of events to a message pump."""

    class Batch(Message):
        """Some engine events are waiting: call `EventPump.take()` to get them in order."""

    def __init__(self, target: MessagePump, *, frame: float = FRAME) -> None:
        self._target = target
        self._frame = frame
        self._interval = frame
        """The frame, or longer while batches take long to draw (`drawn`)."""
        self._queue: list[Event] = []
        self._scheduled = False
        self._last_post = 0.0
        self._held_until = 0.0
        self._typed_at = -TYPING_WINDOW
        self._unsubscribe: Callable[[], None] | None = None

    def attach(self, subscribe: Callable[[Callable[[Event], None]], Callable[[], None]]) -> None:
        self.detach()
        self._unsubscribe = subscribe(self.publish)

    def detach(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def publish(self, event: Event) -> None:
        queue = self._queue
        if (
            queue
            and isinstance(event, PartUpdated)
            and event.delta is not None
            and isinstance(queue[-1], PartUpdated)
            and queue[-1].part.id == event.part.id
        ):
            queue[-1] = event  # same streaming part: the newest holds all the text so far
        else:
            queue.append(event)
        if not self._scheduled:
            self._scheduled = True
            self._post_when_due()

    def _post_when_due(self) -> None:
        now = time.monotonic()
        due = max(self._last_post + self._interval, self._held_until)
        if due <= now:
            self._last_post = now
            self._target.post_message(self.Batch())
        else:
            asyncio.get_running_loop().call_later(due - now, self._post_when_due)

    def drawn(self, seconds: float) -> None:
        """The last batch took `seconds` to apply and draw: the next ones are spaced so
        that drawing takes at most DRAW_SHARE of the time (TYPING_SHARE while typing)."""
        typing = time.monotonic() - self._typed_at < TYPING_WINDOW
        share = TYPING_SHARE if typing else DRAW_SHARE
        self._interval = min(MAX_FRAME, max(self._frame, seconds / share))

    def hold(self) -> None:
        """A key arrived: the next batch waits one frame, so the key's frame draws the
        key alone (a stream's batch would make it lay out and draw the view too)."""
        self._typed_at = time.monotonic()
        self._held_until = self._typed_at + self._frame

    def deferred(self) -> bool:
        """True when a Batch that arrived should wait: a key was typed within the last
        frame (and the stream has not waited MAX_FRAME already). It is posted again when
        the hold ends; the events stay queued."""
        now = time.monotonic()
        if now >= self._held_until or now - self._last_post >= MAX_FRAME:
            return False
        asyncio.get_running_loop().call_later(self._held_until - now, self._post_when_due)
        return True

    def take(self) -> list[Event]:
        """The queued events, oldest first; the next event schedules a new Batch."""
        events, self._queue = self._queue, []
        self._scheduled = False
        return events
