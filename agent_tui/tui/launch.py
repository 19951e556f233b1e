"""`agent-tui` with no subcommand: the app, its first frame before anything heavy.

Nothing imported here (nor by `tui/app.py` at its top) needs pydantic, the engine, litellm
or a tokenizer: the app draws, then opens the engine, its config and the session
(`tui/app_opening.py`). A config file that is not JSON is reported before the app starts;
what only validation, the database or `--continue` finds is reported when the app has
given the terminal back.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from functools import partial
from pathlib import Path

from agent_tui.config.layers import person_files, read_json
from agent_tui.errors import AgentTuiError
from agent_tui.tui import quiet_launch


async def _run(args: argparse.Namespace) -> int:
    from agent_tui.tui.app import AgentApp
    from agent_tui.tui.app_opening import first_page, open_workspace

    app = AgentApp(
        opener=partial(open_workspace, args),
        first_page=first_page(args),  # drawn in the first frame
        continuing=bool(getattr(args, "cont", False) or getattr(args, "session", None)),
        model=getattr(args, "model", None),
        driver_class=quiet_launch.driver_class(),  # the echo back as Textual takes over
    )
    try:
        await app.run_async()
    finally:
        if hasattr(app, "engine"):  # opened: closed with its database
            await app.engine.close("prompt_input_exit")  # MCP server processes end too
    if app.startup_error is not None:
        raise app.startup_error
    return app.return_code or 0


def _provider_log(data_dir: Path) -> str | None:
    """The provider process's log file, or None (then it writes to our stderr) when the
    data dir cannot be created: the database will say why, once the app has started."""
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return str(data_dir / "provider.log")


def launch(args: argparse.Namespace) -> int:
    try:
        for path in person_files():  # plain JSON, at once: before the terminal is taken
            read_json(path)  # (a project's broken file is skipped, with a line, instead)
        from agent_tui import paths
        from agent_tui.provider import remote

        # litellm imports in its own process, on the other core, while the app draws:
        # keys typed meanwhile never wait for its import's hold on the GIL. Its
        # tokenizer is loaded there too, before the first reply needs it. What it prints
        # goes to a file: on the terminal it would break the app's screen.
        remote.start_soon(warm=True, log=_provider_log(paths.data_dir()))
        return asyncio.run(_run(args))
    except AgentTuiError as exc:
        quiet_launch.give_back()  # the message goes to a terminal as the person had it
        print(f"agent-tui: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        quiet_launch.give_back()  # Ctrl+C or a crash before the app took the terminal
