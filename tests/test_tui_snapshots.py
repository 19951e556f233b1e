"""Snapshots of the main screen: a streamed reply, a tool call, a compaction divider, the
sidebar; and the first screen of an empty session, with and without a model provider.
Deterministic: fixed usage figures, no titles from the model, a fixed directory label, and
the screenshot is taken when the session is idle (no spinner, no clock)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from agent_tui import paths
from agent_tui.config.settings import load_config
from agent_tui.provider.defaults import PROVIDERS
from agent_tui.session.opening import Opened, engine_on
from agent_tui.storage.db import Database
from agent_tui.tool.base import AskPermission
from agent_tui.tui.app import AgentApp
from agent_tui.tui.app_opening import FRONT_END
from agent_tui.tui.compaction_divider import CompactionDivider
from agent_tui.tui.highlighting import HIGHLIGHTING
from tests.fake_openai import Call, FakeOpenAI, Text, ToolCalls, Usage
from tests.tui_helpers import type_and_send, view_text, wait_for

REPLY = """The shell printed **hello**. Here is the script:

```python
def greet(name: str) -> str:
    return f"hello {name}"
```
"""


class SnapshotApp(AgentApp):
    """Opens its database inside the loop the snapshot plugin runs the app in (after the
    first frame, as `agent-tui` does)."""

    def __init__(self) -> None:
        super().__init__(self._open, directory_label="~/project")

    async def _open(self, ask: AskPermission) -> Opened:
        config = load_config()
        db = await Database.open(paths.database_path())
        engine = engine_on(db, config, front_end=FRONT_END, ask=ask, owns_database=True)
        return Opened(engine, config)

    async def run_async(self, **kwargs: Any) -> Any:
        try:
            return await super().run_async(**kwargs)
        finally:
            if hasattr(self, "engine"):
                await self.engine.close()


async def _conversation(pilot: Pilot) -> None:
    app = pilot.app
    assert isinstance(app, SnapshotApp)
    await app.loaded.wait()
    await _without_start_notices(pilot)
    app.prompt.cursor_blink = False
    await type_and_send(pilot, "say hello with the shell")
    await wait_for(pilot, lambda: app.chat.status == "idle" and view_text(app) == REPLY, "reply")
    await type_and_send(pilot, "/compact")
    await wait_for(
        pilot,
        lambda: (
            app.chat.status == "idle"
            and any(d.state == "done" for d in app.query(CompactionDivider))
        ),
        "compaction",
    )
    await type_and_send(pilot, "thanks")
    await wait_for(pilot, lambda: app.chat.status == "idle" and view_text(app) == "You're welcome.")
    await wait_for(pilot, lambda: HIGHLIGHTING.idle, "the code highlighted")
    app.clear_notifications()
    await pilot.pause()


def _script(server: FakeOpenAI) -> None:
    server.script(
        ToolCalls(
            [Call("bash", json.dumps({"command": "echo hello"}))],
            usage=Usage(prompt_tokens=9_000, completion_tokens=100),
        ),
        Text(REPLY, usage=Usage(prompt_tokens=9_500, completion_tokens=300)),
        Text("We ran `echo hello` and showed a greet() function."),
        Text("You're welcome.", usage=Usage(prompt_tokens=1_200, completion_tokens=10)),
    )


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_main_screen(configured: FakeOpenAI, snap_compare: Any, size: tuple[int, int]) -> None:
    _script(configured)
    assert snap_compare(SnapshotApp(), terminal_size=size, run_before=_conversation)


async def _first_screen(pilot: Pilot) -> None:
    app = pilot.app
    assert isinstance(app, SnapshotApp)
    await app.loaded.wait()
    await _without_start_notices(pilot)
    app.prompt.cursor_blink = False
    await pilot.pause()


async def _without_start_notices(pilot: Pilot) -> None:
    """The start-up notices (e.g. "Commands run without a sandbox" on a machine without
    bubblewrap) depend on the machine, not on the screen under test."""
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    pilot.app.clear_notifications()


@pytest.mark.parametrize("size", [(80, 24), (120, 36)], ids=["80x24", "120x36"])
def test_first_screen(configured: FakeOpenAI, snap_compare: Any, size: tuple[int, int]) -> None:
    """The empty session: model, directory, window and the keys that matter."""
    assert snap_compare(SnapshotApp(), terminal_size=size, run_before=_first_screen)


def test_first_screen_without_provider(
    isolated: Path, snap_compare: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key, no model, no local server: the first screen says what to set."""
    for provider in PROVIDERS:
        for name in provider.env:
            monkeypatch.delenv(name, raising=False)
    assert snap_compare(SnapshotApp(), terminal_size=(120, 36), run_before=_first_screen)
