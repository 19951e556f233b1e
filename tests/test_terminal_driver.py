"""The app's terminal driver (tui/terminal_driver.py) writes each frame from the event
loop, as it is made, and a terminal that went away does not stop the app."""

from __future__ import annotations

import io

from textual.app import App

from agent_tui.tui import terminal_driver


async def test_a_frame_is_written_in_place_and_a_closed_terminal_is_no_error() -> None:
    driver_class = terminal_driver.driver_class()
    assert driver_class is not None
    driver = driver_class(App(), debug=False)
    terminal = io.StringIO()
    driver._file = terminal
    # Textual's own driver queues for a writer thread that only application mode starts.
    driver.write("\x1b[?2026hframe\x1b[?2026l")
    driver.flush()
    assert terminal.getvalue() == "\x1b[?2026hframe\x1b[?2026l"
    terminal.close()  # hung up
    driver.write("next frame")
    driver.flush()
