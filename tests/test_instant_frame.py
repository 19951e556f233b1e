"""A plain `agent-tui` launch shows the first frame recorded by the previous launch in
the same place before it even imports Textual (tui/instant_frame.py), keeps what is typed
meanwhile, and gives the terminal back as it was however it ends. Driven in a real pty.

To hold the window between the recorded frame and the app's own first frame open for
as long as a test needs, some launches run with a `sitecustomize` that makes the import
of `textual.app` take SLOW_IMPORT seconds longer, as on a slow machine; nothing else of
the app is changed."""

from __future__ import annotations

import os
import termios
import time
from pathlib import Path

import pytest

from agent_tui.tui.instant_frame import ENTER, LEAVE
from tests.fake_openai import FakeOpenAI
from tests.pty_helpers import ROOT, PtyAgent, visible

PLACEHOLDER = b"Message the agent"
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


def frames() -> list[Path]:
    folder = Path(os.environ["AGENT_TUI_DATA_DIR"]) / "frames"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def slow_env(tmp_path: Path) -> dict[str, str]:
    hook = tmp_path / "slow-hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(SLOW_TEXTUAL, encoding="utf-8")
    return {"PYTHONPATH": f"{hook}{os.pathsep}{ROOT}"}


def first_launch(project: Path, **kwargs: object) -> None:
    agent = PtyAgent(project, **kwargs)  # type: ignore[arg-type]
    try:
        agent.wait_for(PLACEHOLDER)
        agent.wait_for(b"100,000 tokens")  # the start is over: the frame was recorded
    finally:
        assert agent.quit() == 0


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


def read_for(agent: PtyAgent, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end and agent._read(0.05):
        pass


def echo_is_on(agent: PtyAgent) -> bool:
    return bool(termios.tcgetattr(agent.master)[3] & termios.ECHO)


def test_the_next_launch_shows_the_recorded_frame_first_and_keeps_what_is_typed(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    first_launch(isolated)
    (recorded,) = frames()
    frame = recorded.read_bytes()
    assert PLACEHOLDER in visible(frame)

    agent = PtyAgent(isolated, env=slow_env(tmp_path))
    try:
        while len(agent.output) < len(ENTER) + len(frame) + frame.count(b"\n") and agent._read(0.1):
            pass
        # The first thing written: the recorded frame, while Textual is still importing.
        # (The terminal turns each "\n" written into "\r\n".)
        assert agent.output.replace(b"\r\n", b"\n").startswith(ENTER.encode() + frame)
        assert not echo_is_on(agent)  # what is typed now is not scribbled over the frame
        agent.type(b"fix the tests")
        read_for(agent, 1.0)  # still importing Textual: nothing draws the keys yet
        assert b"fix the tests" not in visible(agent.output)
        agent.wait_for(b"fix the tests", deadline=SLOW_IMPORT + 30)  # the app drew them
        # Entering the alternate screen again would clear the frame on some terminals:
        # the app does not (the frame stays until its own is drawn over it).
        assert agent.output.count(b"\x1b[?1049h") == 1
        agent.type(b"\x03\x03")
        code, attrs = until_exit(agent)
    finally:
        agent.kill()
    assert code == 0
    assert attrs[3] & termios.ECHO  # Textual restored what it found: the person's settings


def test_ctrl_c_while_the_recorded_frame_is_up_gives_the_terminal_back(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    first_launch(isolated)
    agent = PtyAgent(isolated, env=slow_env(tmp_path), controlling=True)
    try:
        agent.wait_for(PLACEHOLDER)
        agent.type(b"\x03")  # the terminal still turns it into SIGINT: not in raw mode yet
        code, attrs_at_exit = until_exit(agent)
    finally:
        agent.kill()
    assert code == 130
    after = agent.output.rpartition(LEAVE.encode())[2]  # left the frame's screen
    assert b"interrupted" in visible(after)
    assert b"Traceback" not in agent.output
    assert attrs_at_exit and attrs_at_exit[3] & termios.ECHO  # echo is the person's again


def test_another_terminal_size_draws_as_before_and_records_its_own(
    configured: FakeOpenAI, isolated: Path
) -> None:
    first_launch(isolated)
    (recorded,) = frames()
    agent = PtyAgent(isolated, size=(100, 30))
    try:
        agent.wait_for(PLACEHOLDER)
        assert recorded.read_bytes() not in agent.output  # not the 120×36 frame
        agent.wait_for(b"100,000 tokens")
    finally:
        assert agent.quit() == 0
    assert len(frames()) == 2


def test_a_first_frame_with_keys_typed_at_launch_in_it_is_never_recorded(
    configured: FakeOpenAI, isolated: Path
) -> None:
    """The next launch would show them in the prompt, typed by nobody. (Whether the
    app's first frame has them depends on when it read them; none recorded may.)"""
    agent = PtyAgent(isolated)
    try:
        agent.type(b"typed at launch")  # in the terminal before the app reads it
        agent.wait_for(b"typed at launch")
        agent.wait_for(b"100,000 tokens")
    finally:
        assert agent.quit() == 0
    assert all(b"typed at launch" not in visible(f.read_bytes()) for f in frames())


@pytest.mark.parametrize("change", ["config", "switched off"])
def test_no_recorded_frame_when_the_config_changed_or_it_is_off(
    configured: FakeOpenAI, isolated: Path, change: str
) -> None:
    env = {"AGENT_TUI_INSTANT_FRAME": "0"} if change == "switched off" else {}
    first_launch(isolated, env=env)
    if change == "switched off":
        assert frames() == []
        return
    config = isolated / "agent-tui.json"
    config.write_text(config.read_text().replace("100000", "90000"), encoding="utf-8")
    agent = PtyAgent(isolated)
    try:
        agent.wait_for(b"90,000 tokens")
        assert frames()[0].read_bytes() not in agent.output  # the old frame was not shown
    finally:
        assert agent.quit() == 0
    assert len(frames()) == 2


def test_keys_typed_before_the_first_launch_draws_are_not_left_on_the_screen(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    """No recorded frame yet: echo is off from launch all the same, so what is typed
    before the app reads it is not printed on the person's screen (where it stayed,
    under the shell's next prompt, once the app had quit)."""
    agent = PtyAgent(isolated, env=slow_env(tmp_path))
    try:
        end = time.monotonic() + 30
        while echo_is_on(agent) and time.monotonic() < end:
            agent._read(0.02)
        assert not echo_is_on(agent)
        agent.type(b"early words")
        agent.wait_for(b"early words", deadline=SLOW_IMPORT + 30)  # in the app's prompt
        before_the_app = agent.output.partition(b"\x1b[?1049h")[0]
        assert b"early words" not in before_the_app
        agent.type(b"\x03\x03")
        code, attrs = until_exit(agent)
    finally:
        agent.kill()
    assert code == 0
    assert attrs[3] & termios.ECHO


def test_a_resume_after_ctrl_z_records_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual starts its driver's application mode again when the app comes back from
    Ctrl+Z: the first frame was recorded long before, so what is written from then on
    must not pile up in a recording nobody ends."""
    from textual.drivers.linux_driver import LinuxDriver

    from agent_tui.tui import instant_frame

    monkeypatch.setattr(LinuxDriver, "start_application_mode", lambda self: None)
    monkeypatch.setattr(LinuxDriver, "write", lambda self, data: None)
    saved: list[str] = []
    monkeypatch.setattr(instant_frame, "_save", lambda frame, key: saved.append(frame))
    driver_class = instant_frame.driver_class()
    assert driver_class is not None
    driver = object.__new__(driver_class)  # the terminal parts are Textual's, stubbed above
    driver.start_application_mode()  # the launch
    driver.write("first frame")
    driver.first_frame_drawn()
    assert saved == ["first frame"]
    driver.start_application_mode()  # back from Ctrl+Z
    driver.write("a later frame")
    assert driver._recording is None
    driver.first_frame_drawn()
    assert saved == ["first frame"]
