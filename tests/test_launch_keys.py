"""Keys typed while `agent-tui` starts are kept for the app and not printed on the
person's screen (tui/quiet_launch.py), and the terminal is given back as it was however
the launch ends. Driven in a real pty.

To hold the window before the app's first frame open for as long as a test needs, the
launches run with a `sitecustomize` that makes the import of `textual.app` take
SLOW_IMPORT seconds longer, as on a slow machine; nothing else of the app is changed."""

from __future__ import annotations

import termios
import time
from pathlib import Path

from tests.fake_openai import FakeOpenAI
from tests.process_helpers import with_sitecustomize
from tests.pty_helpers import PtyAgent, visible

SLOW_IMPORT = 3.0

SLOW_TEXTUAL = f"""
import importlib.abc, sys, time

class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "textual.app":
            sys.meta_path.remove(self)
            time.sleep({SLOW_IMPORT})
        return None

sys.meta_path.insert(0, Slow())
"""


def slow_env(tmp_path: Path) -> dict[str, str]:
    return with_sitecustomize(tmp_path / "slow-hook", SLOW_TEXTUAL)


def until_exit(agent: PtyAgent) -> tuple[int, list[object]]:
    """Read until the process ends: its exit code, and the terminal's settings then."""
    attrs: list[object] = []
    try:
        end = time.monotonic() + 60
        while (agent._read(0.1) or not attrs) and time.monotonic() < end:
            if agent.proc.poll() is not None and not attrs:
                attrs = termios.tcgetattr(agent.master)
        return agent.proc.wait(timeout=30), attrs
    finally:
        agent.kill()


def echo_is_on(agent: PtyAgent) -> bool:
    return bool(termios.tcgetattr(agent.master)[3] & termios.ECHO)


def wait_quiet(agent: PtyAgent) -> None:
    """Until the launch has turned the terminal's echo off (its first step)."""
    end = time.monotonic() + 30
    while echo_is_on(agent) and time.monotonic() < end:
        agent._read(0.02)
    assert not echo_is_on(agent)


def test_keys_typed_before_the_app_draws_are_kept_and_not_left_on_the_screen(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    """Echo is off from launch, so what is typed before the app reads it is not printed
    on the person's screen (where it would stay, under the shell's next prompt, once the
    app has quit); the app reads it into its prompt; the person's echo is back at exit."""
    agent = PtyAgent(isolated, env=slow_env(tmp_path))
    try:
        wait_quiet(agent)
        agent.type(b"early words")
        agent.wait_for(b"early words", deadline=SLOW_IMPORT + 30)  # in the app's prompt
        before_the_app = agent.output.partition(b"\x1b[?1049h")[0]
        assert b"early words" not in before_the_app
        agent.type(b"\x03\x03")
        code, attrs = until_exit(agent)
    finally:
        agent.kill()
    assert code == 0
    assert attrs[3] & termios.ECHO  # Textual restored what it found: the person's settings


def test_ctrl_c_before_the_app_draws_gives_the_terminal_back(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    agent = PtyAgent(isolated, "--continue", env=slow_env(tmp_path), controlling=True)
    try:
        wait_quiet(agent)
        agent.type(b"\x03")  # the terminal still turns it into SIGINT: not in raw mode yet
        code, attrs_at_exit = until_exit(agent)
    finally:
        agent.kill()
    assert code == 130
    assert b"interrupted" in visible(agent.output)
    assert b"Traceback" not in agent.output
    assert attrs_at_exit and attrs_at_exit[3] & termios.ECHO  # echo is the person's again
