"""`agent-tui --continue` shows the frame of its session recorded by the previous
--continue in the same place, if the database has not been written since
(tui/instant_frame.py); the app's own first frame, drawn over it, is the same session's
newest page. Driven in a real pty.

Launches run with a `sitecustomize` that writes a file once the app has opened its engine
(`app_opening.open_workspace` returned: the start is over) and, for some, makes the import
of the engine (on the app's start thread) take SLOW_IMPORT seconds longer, to hold the
window between the recorded frame and the engine open for as long as a test needs, and
writes a file when that is over; nothing else of the app is changed."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from agent_tui.ids import message_id, part_id
from agent_tui.records import AssistantMessage, TextPart, Tokens, UserMessage
from agent_tui.storage.db import Database
from agent_tui.tui.instant_frame import ENTER
from tests.fake_openai import FakeOpenAI
from tests.pty_helpers import ROOT, PtyAgent, visible

REPLY = "The newest reply of the session"
SLOW_IMPORT = 4.0

HOOKS = """
import importlib.abc, pathlib, sys, time

from agent_tui.tui import app_opening

opened = app_opening.open_workspace

async def open_workspace(*args, **kwargs):
    result = await opened(*args, **kwargs)
    pathlib.Path({drawn_file!r}).write_text("opened")
    return result

app_opening.open_workspace = open_workspace

class Slow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "agent_tui.session.engine":
            sys.meta_path.remove(self)
            time.sleep({seconds})
            pathlib.Path({imported_file!r}).write_text("imported")
        return None

if {seconds}:
    sys.meta_path.insert(0, Slow())
"""


class Hooks:
    """The environment of a launch with HOOKS, and the files they write."""

    def __init__(self, tmp_path: Path, *, slow: bool = False) -> None:
        folder = tmp_path / ("hooks-slow" if slow else "hooks")
        folder.mkdir(exist_ok=True)
        self.drawn = folder / "engine-opened"
        self.imported = folder / "engine-imported"
        code = HOOKS.format(
            drawn_file=str(self.drawn),
            imported_file=str(self.imported),
            seconds=SLOW_IMPORT if slow else 0,
        )
        (folder / "sitecustomize.py").write_text(code, encoding="utf-8")
        self.env = {"PYTHONPATH": f"{folder}{os.pathsep}{ROOT}"}

    def wait_drawn(self, agent: PtyAgent, deadline: float = 60.0) -> None:
        end = time.monotonic() + deadline
        while not self.drawn.exists():
            if time.monotonic() > end or not agent._read(0.05):
                raise TimeoutError("the engine never opened (the start did not end)")


def frames() -> list[Path]:
    folder = Path(os.environ["AGENT_TUI_DATA_DIR"]) / "frames"
    return sorted(folder.iterdir()) if folder.is_dir() else []


async def _add_turn(directory: Path, text: str) -> None:
    """A user message and its reply, written to the project's database."""
    db = await Database.open(Path(os.environ["AGENT_TUI_DATA_DIR"]) / "agent-tui.db")
    try:
        session = await db.latest_session(str(directory))
        if session is None:
            session = await db.create_session(str(directory), title="reopened")
        user = UserMessage(id=message_id(), session_id=session.id, model="openai/test-model")
        await db.upsert_message(user)
        ids = {"session_id": session.id}
        await db.upsert_part(TextPart(id=part_id(), message_id=user.id, text="Go on.", **ids))
        reply = AssistantMessage(
            id=message_id(),
            parent_id=user.id,
            model="openai/test-model",
            finish="stop",
            completed=1,
            tokens=Tokens(input=1_000, output=10),
            **ids,
        )
        await db.upsert_message(reply)
        await db.upsert_part(TextPart(id=part_id(), message_id=reply.id, text=text, **ids))
        await db.flush()
    finally:
        await db.close()


def recorded_launch(project: Path, tmp_path: Path) -> bytes:
    """A --continue launch that draws the session and starts fully: its frame."""
    hooks = Hooks(tmp_path)
    agent = PtyAgent(project, "--continue", env=hooks.env)
    try:
        agent.wait_for(REPLY.encode())
        hooks.wait_drawn(agent)
    finally:
        assert agent.quit() == 0
    (recorded,) = frames()
    return recorded.read_bytes()


def test_continue_shows_the_session_recorded_last_time_then_the_app_draws_the_same(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    asyncio.run(_add_turn(isolated, REPLY))
    frame = recorded_launch(isolated, tmp_path)
    assert REPLY.encode() in visible(frame)

    hooks = Hooks(tmp_path, slow=True)
    agent = PtyAgent(isolated, "--continue", env=hooks.env)
    try:
        while len(agent.output) < len(ENTER) + len(frame) + frame.count(b"\n") and agent._read(0.1):
            pass
        # The first thing written: the recorded frame, before Textual is even imported.
        shown = ENTER.encode() + frame
        assert agent.output.replace(b"\r\n", b"\n").startswith(shown)
        # The app's own first frame follows while the engine still imports, and it is
        # the session's page again: the conversation never blinks to an empty one.
        start = len(agent.output)
        end = time.monotonic() + SLOW_IMPORT + 30
        while REPLY.encode() not in visible(agent.output[start:]):
            assert time.monotonic() < end and agent._read(0.05), "the app drew no page"
        assert not hooks.imported.exists()  # (the engine imports for SLOW_IMPORT seconds)
        hooks.wait_drawn(agent)
    finally:
        assert agent.quit() == 0
    # Nothing was written: this launch's first frame is kept for the next one.
    (kept,) = frames()
    assert REPLY.encode() in visible(kept.read_bytes())


def test_no_session_frame_once_the_database_was_written(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    asyncio.run(_add_turn(isolated, REPLY))
    frame = recorded_launch(isolated, tmp_path)
    asyncio.run(_add_turn(isolated, "A reply written since"))
    hooks = Hooks(tmp_path)
    hooks.drawn.unlink()
    agent = PtyAgent(isolated, "--continue", env=hooks.env)
    try:
        agent.wait_for(b"A reply written since")
        assert frame not in agent.output.replace(b"\r\n", b"\n")  # the old one: not shown
        hooks.wait_drawn(agent)
    finally:
        assert agent.quit() == 0
    assert len(frames()) == 2  # the session as it is now, for the next --continue


def test_a_plain_launch_does_not_show_the_session_frame(
    configured: FakeOpenAI, isolated: Path, tmp_path: Path
) -> None:
    asyncio.run(_add_turn(isolated, REPLY))
    frame = recorded_launch(isolated, tmp_path)
    agent = PtyAgent(isolated)
    try:
        agent.wait_for(b"Message the agent")
        assert frame not in agent.output.replace(b"\r\n", b"\n")
        assert REPLY.encode() not in visible(agent.output)  # a new session: the welcome
        agent.wait_for(b"100,000 tokens")  # the start is over
    finally:
        assert agent.quit() == 0
