"""How every front-end opens the engine on the person's database (`engine_opened`): the
CLI's commands, `run`, `agent-tui acp` and `agent-tui serve` for their whole life
(`open_engine`), the app after its first frame (`open_for_app`); and the session asked
for (`asked_session`). A view never opens storage itself."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_tui import paths
from agent_tui.config.settings import Config, load_config
from agent_tui.engine_context import ConfigLoader, EngineContext
from agent_tui.errors import NotFoundError
from agent_tui.provider.defaults import choose_by_keys, choose_model
from agent_tui.records import Session, Worktree
from agent_tui.session.engine import Engine
from agent_tui.storage.db import Database
from agent_tui.tool.base import AskPermission

APP_START = "Start agent-tui without --continue."


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


def engine_on(
    db: Database,
    config: Config,
    *,
    front_end: str,
    ask: AskPermission | None = None,
    overrides: dict[str, Any] | None = None,
    model_titles: bool = False,
    owns_database: bool = False,
) -> Engine:
    """An engine on an open database; `front_end` names it to other processes, `ask`
    asks the person (None refuses what would ask), `overrides` are what the command line
    set over every project's config; `owns_database`: `Engine.close` closes it too."""
    context = EngineContext(
        db=db, config=config, ask=ask, front_end=front_end, load=project_loader(config, overrides)
    )
    return Engine(context, model_titles=model_titles, owns_database=owns_database)


async def engine_opened(config: Config, front_end: str, **options: Any) -> Engine:
    """How every front-end opens the engine: on the person's database, which it closes
    with it (`options`: `engine_on`'s)."""
    db = await Database.open(paths.database_path())
    return engine_on(db, config, front_end=front_end, owns_database=True, **options)


@contextlib.asynccontextmanager
async def open_engine(config: Config, command: str) -> AsyncIterator[Engine]:
    """The engine of `agent-tui COMMAND` (`run`, `acp`, `serve`, …) for a block."""
    engine = await engine_opened(config, f"agent-tui {command}")
    try:
        yield engine
    finally:
        await engine.close()


async def asked_session(
    engine: Engine, directory: Path, session: str | None, latest: bool, start: str
) -> Session | None:
    """The session asked for: by id or a unique prefix of it, else (`latest`) the
    directory's newest; None when none was asked for. `start` says how to start one."""
    if session:
        return await engine.queries.find_session(session)
    if not latest:
        return None
    if (found := await engine.queries.latest_session(str(directory))) is None:
        raise NotFoundError(f"No session to continue in {directory}. {start}")
    return found


@dataclass
class Opened:
    """What the app opens after its first frame: the engine (which closes the database
    with it), the validated config, and the session to show (None: a new one)."""

    engine: Engine
    config: Config
    session: Session | None = None


@dataclass
class AppStart:
    """What the app was started with: its folder, `--model`, `--session`, `--continue`."""

    directory: Path
    model: str | None = None
    session: str | None = None
    cont: bool = False
    worktree: Worktree | None = None
    """`-w`: the worktree made for it (the directory), where its new session works."""

    @property
    def overrides(self) -> dict[str, Any] | None:
        return {"model": self.model} if self.model else None


async def open_for_app(start: AppStart, ask: AskPermission, front_end: str) -> Opened:
    """The validated config (its model chosen), the engine on the person's database, and
    the session asked for with --continue / --session; errors as `AgentTuiError`s naming
    what to fix (nothing is left open then)."""
    config = load_config(start.overrides)
    # No model in the config: the keys present pick it, or else a local server (probed
    # briefly, only then); with nothing, the welcome view says what to set.
    await choose_model(config)
    engine = await engine_opened(
        config, front_end, ask=ask, overrides=start.overrides, model_titles=True
    )
    try:
        found = await asked_session(engine, start.directory, start.session, start.cont, APP_START)
        if start.worktree is not None:
            found = await engine.worktrees.new_session(start.worktree)
    except BaseException:
        await engine.close()
        raise
    return Opened(engine, config, found)
