"""A tiny synchronous publish/subscribe bus for engine events."""

from __future__ import annotations

from collections.abc import Callable

from agent_tui.events import Event

Subscriber = Callable[[Event], None]


class Bus:
    """Subscribers are called in order, on the publisher's thread; they must not block."""

    def __init__(self) -> None:
        self._subscribers: list[Subscriber] = []

    def subscribe(self, fn: Subscriber) -> Callable[[], None]:
        self._subscribers.append(fn)
        return lambda: self._subscribers.remove(fn)

    def publish(self, event: Event) -> None:
        for fn in list(self._subscribers):
            fn(event)
