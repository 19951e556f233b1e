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
from agent_tui.tui import instant_frame


async def _run(args: argparse.Namespace) -> int:
    from agent_tui.tui.app import AgentApp
    from agent_tui.tui.app_opening import first_page, open_workspace

    kind = _recorded_kind(args)
    app = AgentApp(
        opener=partial(open_workspace, args),
        first_page=first_page(args),  # drawn in the first frame
        continuing=bool(getattr(args, "cont", False) or getattr(args, "session", None)),
        model=getattr(args, "model", None),
        # Its first frame is recorded for the next launch here (instant_frame.py).
        driver_class=instant_frame.driver_class(kind) if kind else None,
    )
    try:
        await app.run_async()
    finally:
        if hasattr(app, "engine"):  # opened: closed with its database
            await app.engine.close("prompt_input_exit")  # MCP server processes end too
            instant_frame.save_session_frame()  # if the database is as it was at launch
    if app.startup_error is not None:
        raise app.startup_error
    return app.return_code or 0


def _recorded_kind(args: argparse.Namespace) -> str | None:
    """`agent-tui` with no option, or with --continue only: the launches whose frame is
    recorded and shown (instant_frame.py)."""
    if getattr(args, "session", None) or getattr(args, "model", None):
        return None
    return instant_frame.CONTINUE if getattr(args, "cont", False) else instant_frame.PLAIN


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
        remote.start(warm=True, log=_provider_log(paths.data_dir()))
        return asyncio.run(_run(args))
    except AgentTuiError as exc:
        instant_frame.abandon()  # the message goes to the person's screen, not the frame
        print(f"agent-tui: {exc}", file=sys.stderr)
        return exc.exit_code
    finally:
        instant_frame.abandon()  # Ctrl+C or a crash before the app took the terminal
