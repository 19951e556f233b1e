"""An engine on the person's database, for a front-end's whole life (the CLI's
commands, `agent-tui acp`, `agent-tui serve`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from agent_tui import paths
from agent_tui.config import Config
from agent_tui.engine_context import EngineContext
from agent_tui.session.engine import Engine
from agent_tui.storage.db import Database


@contextlib.asynccontextmanager
async def open_engine(config: Config, command: str = "") -> AsyncIterator[Engine]:
    """An engine on the user's database; `command` names it to other processes."""
    db = await Database.open(paths.database_path())
    engine = None
    front_end = f"agent-tui {command}".strip()
    try:
        engine = Engine(EngineContext(db=db, config=config, front_end=front_end))
        yield engine
    finally:
        if engine is not None:
            await engine.close()
        await db.close()
