"""`agent-tui` with no subcommand: the app, its first frame before anything heavy.

Nothing imported here (nor by `tui/app.py` at its top) needs pydantic, the engine, litellm
or a tokenizer: the app draws, then opens the config, the database and the session
(`tui/opening.py`). A config file that is not JSON is reported before the app starts;
what only validation, the database or `--continue` finds is reported when the app has
given the terminal back.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from functools import partial

from agent_tui.config_files import config_files, read_json
from agent_tui.errors import AgentTuiError


async def _run(args: argparse.Namespace) -> int:
    from agent_tui.tui.app import AgentApp
    from agent_tui.tui.opening import open_workspace

    app = AgentApp(
        opener=partial(open_workspace, args),
        continuing=bool(getattr(args, "cont", False) or getattr(args, "session", None)),
        model=getattr(args, "model", None),
    )
    try:
        await app.run_async()
    finally:
        if app.loaded.is_set() or hasattr(app, "engine"):
            await app.engine.close()  # MCP server processes end with the app
        if hasattr(app, "db"):
            await app.db.close()
    if app.startup_error is not None:
        raise app.startup_error
    return app.return_code or 0


def launch(args: argparse.Namespace) -> int:
    try:
        for path in config_files():  # plain JSON, at once: before the terminal is taken
            read_json(path)
        from agent_tui.provider import remote

        # litellm imports in its own process, on the other core, while the app draws:
        # keys typed meanwhile never wait for its import's hold on the GIL. Its
        # tokenizer is loaded there too, before the first reply needs it.
        remote.start(warm=True)
        return asyncio.run(_run(args))
    except AgentTuiError as exc:
        print(f"agent-tui: {exc}", file=sys.stderr)
        return exc.exit_code
