"""What the app opens once its first frame is drawn: the config, the model, the database
and the session to show; and the engine's modules, imported on a thread first.

Nothing of this is on the path to the first frame (`tui/launch.py`, `tui/app.py`): pydantic,
the config's models, storage and the engine take about twice Textual's own import
(docs/performance.md)."""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_tui.config.settings import Config
    from agent_tui.storage.db import Database
    from agent_tui.storage.models import Session

ENGINE_MODULES = (
    "agent_tui.config.settings",
    "agent_tui.provider.defaults",
    "agent_tui.storage.db",
    "agent_tui.session.engine",
    "agent_tui.tui.session_view",
    "agent_tui.tui.event_pump",
    "agent_tui.tui.conversation_events",
)
"""What the app needs to open a session and show its events, imported by `import_engine`."""


def import_engine() -> None:
    """Import the engine's modules (run on a thread: the event loop keeps drawing and
    taking keys meanwhile; the GIL is handed over every few milliseconds)."""
    for name in ENGINE_MODULES:
        importlib.import_module(name)


@dataclass
class Opened:
    config: Config
    db: Database
    session: Session | None


async def open_workspace(args: argparse.Namespace) -> Opened:
    """The validated config (its model chosen), the database, and the session asked for
    with --continue / --session; errors as `AgentTuiError`s naming what to fix."""
    from agent_tui import paths
    from agent_tui.config.settings import load_config
    from agent_tui.provider.defaults import choose_model
    from agent_tui.storage.db import Database

    model = getattr(args, "model", None)
    config = load_config({"model": model} if model else None)
    # No model in the config: the keys present pick it, or else a local server (probed
    # briefly, only then); with nothing, the welcome view says what to set.
    await choose_model(config)
    db = await Database.open(paths.database_path())
    try:
        session = await _initial_session(db, args)
    except BaseException:
        await db.close()
        raise
    return Opened(config, db, session)


async def _initial_session(db: Database, args: argparse.Namespace) -> Session | None:
    from agent_tui.errors import NotFoundError

    if getattr(args, "session", None):
        return await db.find_session_by_prefix(args.session)
    if getattr(args, "cont", False):
        session = await db.latest_session(str(Path.cwd()))
        if session is None:
            raise NotFoundError(
                f"No session to continue in {Path.cwd()}. Start agent-tui without --continue."
            )
        return session
    return None
