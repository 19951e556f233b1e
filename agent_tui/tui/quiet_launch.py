"""Keys typed while the app starts: kept for it, and not printed on the person's screen.

Between `agent-tui` and the app's first frame the terminal is still in its cooked mode:
it would echo what is typed, and the echo would stay on the person's screen under the
shell's next prompt once the app has quit. So `__main__` turns the echo off first thing
(`quiet`); the keys wait in the terminal until the app reads them. Textual saves the
terminal's settings when it takes the terminal, to restore them at exit: its driver
(`driver_class`) gives the person's settings back just before (`give_back`), and so
does the launch when the app never gets that far (an error, Ctrl+C).

Imported by `__main__` before anything else: only os at the top.
"""

from __future__ import annotations

import os

_saved: list | None = None
"""The terminal's settings before `quiet`, until `give_back`."""


def quiet() -> None:
    """The terminal's echo off, when stdin and stdout are a POSIX terminal."""
    global _saved
    if _saved is not None or os.name != "posix" or not (os.isatty(0) and os.isatty(1)):
        return
    import termios

    try:
        attrs = termios.tcgetattr(0)
        quieter = list(attrs)
        quieter[3] &= ~termios.ECHO
        termios.tcsetattr(0, termios.TCSANOW, quieter)
    except termios.error:
        return
    _saved = attrs


def give_back() -> None:
    """The person's settings back: the app's driver is taking the terminal, or the app
    never will (an error, Ctrl+C)."""
    global _saved
    attrs, _saved = _saved, None
    if attrs is None:
        return
    import termios

    try:  # noqa: SIM105 (contextlib is not imported this early)
        termios.tcsetattr(0, termios.TCSANOW, attrs)
    except termios.error:
        pass


def driver_class() -> type | None:
    """Textual's driver on POSIX, handing the person's settings over before it saves
    them; None (Textual's own choice) elsewhere."""
    if os.name != "posix":
        return None
    from textual.drivers.linux_driver import LinuxDriver

    class QuietLaunchDriver(LinuxDriver):
        def start_application_mode(self) -> None:
            give_back()
            super().start_application_mode()

    return QuietLaunchDriver
