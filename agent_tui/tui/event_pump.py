"""Engine events -> Textual messages, at most one batch per frame however fast they come.

The bus calls subscribers synchronously on the event loop. Posting one Textual message
per token would make the app's queue the bottleneck at thousands of tokens a second, and
even one batch per event-loop turn re-renders the stream far more often than the screen
can show it, so input waits behind renders. Events are queued here; the first event after
a quiet spell is posted at once (no added latency for a key's echo or a tool line), later
ones wait for the next frame slot, `FRAME` seconds after the previous batch. Consecutive
updates of the same streaming part collapse into the newest one: views render text parts
from the part's full text, never from the deltas, so nothing is lost by collapsing them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from textual.message import Message
from textual.message_pump import MessagePump

from agent_tui.bus import Bus
from agent_tui.events import Event, PartUpdated

FRAME = 1 / 30
"""Seconds between two batches: a streamed reply is re-rendered at most 30 times a second."""


class EventPump:
    """Subscribes to an engine bus and forwards batches of events to a message pump."""

    class Batch(Message):
        """Some engine events are waiting: call `EventPump.take()` to get them in order."""

    def __init__(self, target: MessagePump, *, frame: float = FRAME) -> None:
        self._target = target
        self._frame = frame
        self._queue: list[Event] = []
        self._scheduled = False
        self._last_post = 0.0
        self._unsubscribe: Callable[[], None] | None = None

    def attach(self, bus: Bus) -> None:
        self.detach()
        self._unsubscribe = bus.subscribe(self.publish)

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
        if self._scheduled:
            return
        self._scheduled = True
        wait = self._last_post + self._frame - time.monotonic()
        if wait <= 0:
            self._post()
        else:
            asyncio.get_running_loop().call_later(wait, self._post)

    def _post(self) -> None:
        self._last_post = time.monotonic()
        self._target.post_message(self.Batch())

    def take(self) -> list[Event]:
        """The queued events, oldest first; the next event schedules a new Batch."""
        events, self._queue = self._queue, []
        self._scheduled = False
        return events
