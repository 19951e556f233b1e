"""Telling the person, wherever they are looking, that a session not on screen needs them
or has finished: the terminal's bell, a desktop notification through the terminal
(OSC 9 or OSC 777, where it shows one), and the person's own `notify` program (as
Codex's: its words, then one JSON argument)."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping
from typing import Literal

from agent_tui.tui.session_board import Attention

Terminal = Literal["auto", "osc9", "osc777", "bell", "off"]
OSC9_PROGRAMS = ("iTerm.app", "WezTerm", "ghostty")
OSC777_TERMS = ("foot", "rxvt-unicode")


def terminal_kind(setting: Terminal, env: Mapping[str, str]) -> Terminal:
    """What `auto` means in this terminal: OSC 9 or OSC 777 where the terminal shows a
    desktop notification for it, else only the bell."""
    if setting != "auto":
        return setting
    if env.get("TERM_PROGRAM") in OSC9_PROGRAMS or env.get("KITTY_WINDOW_ID"):
        return "osc9"
    if env.get("TERM", "").startswith(OSC777_TERMS):
        return "osc777"
    return "bell"


def _clean(text: str) -> str:
    """No control character may end the escape sequence early or start another."""
    return "".join(c if c.isprintable() else " " for c in text).replace(";", ",")


def sequence(kind: Terminal, title: str, body: str) -> str:
    """The bytes that ring the bell and, for OSC 9/777, show a desktop notification."""
    if kind == "osc9":
        return f"\x1b]9;{_clean(title)}: {_clean(body)}\x07\x07"
    if kind == "osc777":
        return f"\x1b]777;notify;{_clean(title)};{_clean(body)}\x07\x07"
    return "\x07" if kind == "bell" else ""


def payload(attention: Attention, directory: str) -> str:
    kind = {"waiting": "waiting", "failed": "failed"}.get(attention.state, "finished")
    return json.dumps(
        {
            "type": kind,
            "session_id": attention.session_id,
            "title": attention.title,
            "directory": directory,
            "reason": attention.reason,
        }
    )


class Notifier:
    """Rings the terminal (`write`: the app's driver, None when headless) and runs the
    `notify` program; a program that cannot start is said once (`warn`)."""

    def __init__(
        self,
        terminal: Terminal,
        command: list[str],
        write: Callable[[str], None] | None,
        warn: Callable[[str], None],
    ) -> None:
        self.kind = terminal_kind(terminal, os.environ)
        self.command = command
        self._write = write
        self._warn = warn
        self._tasks: set[asyncio.Task[None]] = set()

    def tell(self, attention: Attention, directory: str) -> None:
        title = f"agent-tui: {attention.title}"
        if self._write is not None and (data := sequence(self.kind, title, attention.reason)):
            self._write(data)
        if self.command:
            task = asyncio.get_running_loop().create_task(self._run(payload(attention, directory)))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, argument: str) -> None:
        try:
            process = await asyncio.create_subprocess_exec(
                *self.command,
                argument,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            self._warn(f"notify: cannot run {self.command[0]!r} ({exc.strerror or exc}).")
            self.command = []
            return
        await process.wait()

    async def close(self) -> None:
        """Waits for the programs still running (the app is closing)."""
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
