"""An engine on the person's database, for a front-end's whole life (the CLI's
commands, `agent-tui acp`, `agent-tui serve`)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.config.settings import Config, load_config
from agent_tui.engine_context import ConfigLoader, EngineContext
from agent_tui.provider.defaults import choose_by_keys
from agent_tui.session.engine import Engine
from agent_tui.storage.db import Database


def project_loader(home: Config, overrides: dict[str, Any] | None = None) -> ConfigLoader:
    """How the engine loads the config of a session's project directory (`serve` and
    `acp` serve many): the person's files and that project's own, as far as its trust
    allows. Without a model of its own, the one a key picks, else the first project's."""

    def load(directory: Path, trust: bool) -> Config:
        config = load_config(overrides, directory, trust=trust)
        if choose_by_keys(config) is None:
            config.model = home.model
        return config

    return load


@contextlib.asynccontextmanager
async def open_engine(
    config: Config, command: str = "", overrides: dict[str, Any] | None = None
) -> AsyncIterator[Engine]:
    """An engine on the user's database; `command` names it to other processes."""
    db = await Database.open(paths.database_path())
    engine = None
    front_end = f"agent-tui {command}".strip()
    try:
        context = EngineContext(
            db=db, config=config, front_end=front_end, load=project_loader(config, overrides)
        )
        engine = Engine(context)
        yield engine
    finally:
        if engine is not None:
            await engine.close()
        await db.close()
