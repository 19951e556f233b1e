"""The app's terminal driver: Textual's on POSIX, with two changes.

- It gives the person's terminal settings back before Textual saves them to restore at
  exit (`quiet_launch.give_back`): the launch had turned the echo off.
- It writes each frame to the terminal from the event loop, as the frame is made.
  Textual's driver queues every write for a thread of its own, which then has to win the
  GIL from the event loop (busy with the next batch of a streaming reply) before the
  frame reaches the terminal: a typed key's echo waited for that handoff too. A
  terminal's writes are quick and the queue was bounded anyway (Textual blocks the loop
  once a few frames wait), so nothing is lost by writing in place; figures:
  docs/performance.md.
"""

from __future__ import annotations

import os
from contextlib import suppress


def driver_class() -> type | None:
    """The app's driver on POSIX; None (Textual's own choice) elsewhere."""
    if os.name != "posix":
        return None
    from textual.drivers.linux_driver import LinuxDriver

    from agent_tui.tui.quiet_launch import give_back

    class TerminalDriver(LinuxDriver):
        def start_application_mode(self) -> None:
            give_back()
            super().start_application_mode()

        def write(self, data: str) -> None:
            with suppress(OSError, ValueError):  # the terminal is gone (hung up, closed)
                self._file.write(data)

        def flush(self) -> None:
            with suppress(OSError, ValueError):
                self._file.flush()

    return TerminalDriver
