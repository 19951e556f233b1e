"""What the app opens once its first frame is drawn: the engine on the person's
database, through the engine facade (`session/opening.py`), with the config and the
session to show; and the engine's modules, imported on a thread first.

Nothing of this is on the path to the first frame (`tui/launch.py`, `tui/app.py`): pydantic,
the config's models, storage and the engine take about twice Textual's own import
(docs/performance.md)."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_tui.session.newest_page import Page
    from agent_tui.session.opening import Opened
    from agent_tui.tool.base import AskPermission

ENGINE_MODULES = (
    "agent_tui.session.opening",
    "agent_tui.tui.session_view",
    "agent_tui.tui.event_pump",
    "agent_tui.tui.conversation_events",
)
"""What the app needs to open a session and show its events, imported by `import_engine`
(the opening brings the config, the provider's defaults, storage and the engine)."""
FRONT_END = "the agent-tui app"
"""How another process names this one when a session is busy here."""


def import_engine() -> None:
    """Import the engine's modules (run on a thread: the event loop keeps drawing and
    taking keys meanwhile; the GIL is handed over every few milliseconds)."""
    for name in ENGINE_MODULES:
        importlib.import_module(name)


def first_page(args: argparse.Namespace) -> Page | None:
    """--continue: the session's newest page, read before the engine's modules are
    imported (only the data models: `session/newest_page.py`); None without --continue,
    with nothing imported (the data models are no part of an empty start's first frame)."""
    if not getattr(args, "cont", False):
        return None
    from agent_tui.session.newest_page import newest_page
    from agent_tui.tui.conversation import FIRST_PAGE

    return newest_page(Path.cwd(), FIRST_PAGE)


async def open_workspace(args: argparse.Namespace, ask: AskPermission) -> Opened:
    """The engine, the validated config and the session asked for with --continue /
    --session; errors as `AgentTuiError`s naming what to fix."""
    from agent_tui.session.opening import AppStart, open_for_app

    start = AppStart(
        Path.cwd(),
        model=getattr(args, "model", None),
        session=getattr(args, "session", None),
        cont=getattr(args, "cont", False),
        worktree=getattr(args, "made_worktree", None),
    )
    return await open_for_app(start, ask, FRONT_END)
