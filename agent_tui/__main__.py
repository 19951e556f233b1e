"""`agent-tui` and `python -m agent_tui`: the command, in this process (its caller's
directory, environment, umask, limits and confinement). Keep this import-light (no
litellm, no Textual)."""

from __future__ import annotations

import contextlib
import gc
import os
import sys

if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    # `python -m agent_tui` in a project puts the project first on the import path: a
    # `textual.py` the model wrote there would run as agent-tui, outside the sandbox.
    del sys.path[0]


def _start_provider_early(argv: list[str]) -> None:
    """Launch the provider process (provider/remote.py) now, before the CLI's imports:
    the first request leaves that much sooner. Only when nothing could send the
    command to a server instead (`--attach`, `run.attach`); otherwise, and whenever in
    doubt, `cli.main` decides later, as it always does."""
    from agent_tui.provider import remote  # os and sys only, at its top

    if not argv or argv[0] not in remote.MODEL_COMMANDS:
        return
    if any(arg in ("-h", "--help") or arg.startswith("--attach") for arg in argv[1:]):
        return
    try:
        from agent_tui.config.layers import raw_value

        if (raw_value("run", "attach") or "off") != "off":
            return
    except Exception:  # a broken config file: the CLI reports it
        return
    remote.start()


def _is_the_app(args: list[str]) -> bool:
    """No subcommand (options only, not --help): `agent-tui` starts the app."""
    return not any(not a.startswith("-") or a in ("-h", "--help") for a in args)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if _is_the_app(args):
        from agent_tui.tui import quiet_launch

        quiet_launch.quiet()  # keys typed before the app reads them: not echoed, kept
        # No collections while Textual and the app import (a share of the time to the
        # first frame went to collections walking what the imports build, all of it
        # kept: docs/performance.md): the app turns them back on after its first frame.
        gc.disable()
    try:
        _start_provider_early(args)
        from agent_tui.cli import main as cli_main

        return cli_main(args)
    except KeyboardInterrupt:  # Ctrl+C before the CLI is there to catch it
        _give_terminal_back()
        print("\nagent-tui: interrupted.", file=sys.stderr)
        return 130
    finally:
        _give_terminal_back()


def _give_terminal_back() -> None:
    """The terminal's echo back, when the app never took the terminal
    (tui/quiet_launch.py)."""
    if "agent_tui.tui.quiet_launch" in sys.modules:
        sys.modules["agent_tui.tui.quiet_launch"].give_back()


def run() -> None:
    """Console entry: exit without tearing the interpreter down (a long while for the
    engine's modules, longer with litellm's): whatever must be saved is closed by now (the
    database, the provider process, tools' processes: `cli.main`'s `finally`)."""
    code = main()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed pipe (`| head`)
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
