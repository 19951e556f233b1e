"""`agent-tui` with no subcommand: load config, open the database, run the app.

Nothing here imports litellm or a tokenizer: the first frame must not wait for them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from agent_tui import paths
from agent_tui.config import load_config
from agent_tui.errors import AgentTuiError, NotFoundError
from agent_tui.provider.defaults import choose_model
from agent_tui.storage.db import Database
from agent_tui.storage.models import Session


async def _initial_session(db: Database, args: argparse.Namespace) -> Session | None:
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


async def _run(args: argparse.Namespace) -> int:
    model = getattr(args, "model", None)
    config = load_config({"model": model} if model else None)
    # No model in the config: the keys present pick it, or else a local server (probed
    # briefly, only then); with nothing, the app's first screen says what to set.
    await choose_model(config)
    db = await Database.open(paths.database_path())
    try:
        session = await _initial_session(db, args)
        from agent_tui.tui.app import AgentApp

        app = AgentApp(config, db, session, model=model)
        try:
            await app.run_async()
        finally:
            await app.engine.close()  # MCP server processes end with the app
        return app.return_code or 0
    finally:
        await db.close()


def launch(args: argparse.Namespace) -> int:
    try:
        return asyncio.run(_run(args))
    except AgentTuiError as exc:
        print(f"agent-tui: {exc}", file=sys.stderr)
        return exc.exit_code
