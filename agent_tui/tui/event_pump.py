"""Engine events -> Textual messages, batched so a fast stream costs one message per frame.

The bus calls subscribers synchronously on the event loop. Posting one Textual message
per token would make the app's queue the bottleneck at thousands of tokens a second, so
events are queued here and one `EventPump.Batch` is posted whenever the queue turns
non-empty. Consecutive updates of the same streaming part collapse into the newest one:
views render text parts from the part's full text, never from the deltas, so nothing is
lost by collapsing them.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.message import Message
from textual.message_pump import MessagePump

from agent_tui.bus import Bus
from agent_tui.events import Event, PartUpdated


class EventPump:
    """Subscribes to an engine bus and forwards batches of events to a message pump."""

    class Batch(Message):
        """Some engine events are waiting: call `EventPump.take()` to get them in order."""

    def __init__(self, target: MessagePump) -> None:
        self._target = target
        self._queue: list[Event] = []
        self._posted = False
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
        if not self._posted:
            self._posted = True
            self._target.post_message(self.Batch())

    def take(self) -> list[Event]:
        """The queued events, oldest first; the next event posts a new Batch."""
        events, self._queue = self._queue, []
        self._posted = False
        return events
