"""Helpers for the TUI tests: build the app against the test config, wait for state."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.message import Message
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Static

from agent_tui import paths
from agent_tui.config.settings import Config, load_config
from agent_tui.records import AssistantMessage, Session, TextPart
from agent_tui.session.opening import Opened, engine_on
from agent_tui.storage.db import Database
from agent_tui.tool.base import AskPermission
from agent_tui.tui.app import AgentApp
from agent_tui.tui.app_opening import FRONT_END
from tests.fake_openai import FakeOpenAI

WAIT_TIMEOUT = 60.0
CLICK_TRIES = 5


class PumpTarget:
    """Stands in for the app an EventPump posts to: records when a batch is posted."""

    def __init__(self) -> None:
        self.posted: list[Message] = []
        self.arrived = asyncio.Event()

    def post_message(self, message: Message) -> bool:
        self.posted.append(message)
        self.arrived.set()
        return True


class GivenApp(AgentApp):
    """The app on a database the test opened, reads and closes (`db`): its engine is made
    on it after the first frame, through the facade (`opening.engine_on`), as `agent-tui`
    makes one on the person's; the session shown is the one on `chat.session` by then.
    No titles from the model unless `model_titles`."""

    def __init__(
        self,
        config: Config,
        db: Database,
        session: Session | None = None,
        *,
        model_titles: bool = False,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("continuing", session is not None)
        super().__init__(self._given, **kwargs)
        self.given_config, self.db, self.model_titles = config, db, model_titles
        self.chat.session = session

    async def _given(self, ask: AskPermission) -> Opened:
        config = self.given_config
        engine = engine_on(
            self.db, config, front_end=FRONT_END, ask=ask, model_titles=self.model_titles
        )
        return Opened(engine, config, self.chat.session)


async def open_app(**kwargs: Any) -> GivenApp:
    config = load_config()
    db = await Database.open(paths.database_path())
    kwargs.setdefault("directory_label", "~/project")
    return GivenApp(config, db, **kwargs)


async def wait_for(
    pilot: Pilot, predicate: Callable[[], object], what: str = "", timeout: float = WAIT_TIMEOUT
) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.01)


async def click_to_focus(pilot: Pilot, widget: Widget) -> None:
    """Click `widget` until it has the focus: a click lands where the widget was drawn,
    and the conversation may still scroll (a reply's end) between the two."""
    for _ in range(CLICK_TRIES):
        await pilot.pause()
        await pilot.click(widget)
        with contextlib.suppress(AssertionError):
            await wait_for(pilot, lambda: widget.has_focus, "the focus", timeout=2)
            return
    raise AssertionError(f"{widget!r} never took the focus from a click")


async def type_and_send(pilot: Pilot, text: str) -> None:
    app = pilot.app
    assert isinstance(app, AgentApp)
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")


async def ask(pilot: Pilot, server: FakeOpenAI, *questions: str) -> None:
    """Send each question in turn, waiting until its request went out and the app is idle."""
    app = pilot.app
    assert isinstance(app, AgentApp)
    for question in questions:
        sent = len(server.requests)
        await type_and_send(pilot, question)
        await wait_for(pilot, lambda n=sent: len(server.requests) > n, f"{question!r} sent")
        await wait_for(pilot, lambda: app.chat.status == "idle", f"{question!r} answered")


def sidebar_context(app: AgentApp) -> str:
    return str(app.query_one("#sidebar-context", Static).render())


def view_text(app: AgentApp) -> str:
    return last_reply(app.chat.view)


def last_reply(view: Any) -> str:
    """The text of the newest assistant message the session view holds."""
    for entry in reversed(view._entries):
        if isinstance(entry.info, AssistantMessage):
            return "".join(
                p.text
                for p in entry.parts.values()
                if isinstance(p, TextPart) and not p.synthetic and not p.ignored
            )
    return ""


async def close(app: AgentApp) -> None:
    await app.db.close()


def project_dir() -> Path:
    return Path.cwd()
