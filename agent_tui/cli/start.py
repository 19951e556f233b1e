"""Command-line entry: the arguments (cli/parser.py) and what runs them: the app, `acp`,
`serve`, `run` or a command of the catalog. Errors are printed, never raised."""

from __future__ import annotations

import argparse
import contextlib
import gc
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agent_tui import procs
from agent_tui.command.core import CLI, Command
from agent_tui.errors import AgentTuiError, UsageError

if TYPE_CHECKING:
    from agent_tui.config.settings import Config


def _config(args: argparse.Namespace, calls_model: bool) -> Config:
    """The config, its model chosen by the config or the keys present. A command that
    calls the model also tries a local server, and says what it can tell without a
    provider (a broken config, or no provider at all: no key, no local server) before
    litellm's import starts (it takes seconds, and its thread starves everything else of
    the GIL)."""
    from agent_tui.config.settings import load_config
    from agent_tui.provider.defaults import choose_by_keys, choose_model

    config = load_config({"model": args.model} if getattr(args, "model", None) else None)
    if not calls_model:
        choose_by_keys(config)
        return config
    import asyncio

    from agent_tui.provider.auth import check_setup

    asyncio.run(choose_model(config, probe=True))
    # a continued session or an agent may have a model of its own
    if args.command == "run" and not (args.session or args.cont or args.agent):
        check_setup(config.model, config)
    return config


def cli_commands() -> tuple[Command, ...]:
    """The catalog's commands the CLI offers, this directory's custom ones included."""
    from agent_tui.command.catalog import customs, offered_in

    try:
        custom, _ = customs(Path.cwd())
    except OSError:  # a directory gone: its commands with it
        custom = ()
    return (*offered_in(CLI), *custom)


FORMER_NAMES = {"engine": "relay"}
"""Subcommands renamed since, still accepted from people's scripts (docs/relay.md)."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    argv = [FORMER_NAMES.get(argv[0], argv[0]), *argv[1:]] if argv else argv
    args, commands = _parse(argv)
    if args.command is not None:  # the app's own start: once its session is drawn
        procs.reap_in_background()  # what a killed agent-tui left running (procs.py)
    restore_signals = procs.install_exit_signals()
    try:
        return _dispatch(args, commands)
    except AgentTuiError as exc:
        print(f"agent-tui: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("\nagent-tui: interrupted.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `agent-tui export ID | head`: the reader has what it wanted
        from agent_tui.run_output import READER_GONE_EXIT, silence

        silence(sys.stdout)
        silence(sys.stderr)
        return READER_GONE_EXIT
    finally:
        if "agent_tui.provider.remote" in sys.modules:
            sys.modules["agent_tui.provider.remote"].stop()
        procs.shutdown()  # nothing a tool started outlives agent-tui
        restore_signals()


class _NeedsCatalog(Exception):
    pass


def _parse(argv: list[str]) -> tuple[argparse.Namespace, dict[str, Command]]:
    """The arguments, and the catalog's commands when they name one. The app, `run`,
    `acp` and `serve` are parsed without the catalog, nor this directory's custom commands
    (reading them is a share of the app's start; it reads them after its first frame, and a
    run's `/NAME` text finds its command in cli/prompt.py). Help, and an error, come from
    the whole parser."""
    from agent_tui.cli.parser import build_parser

    if not {"-h", "--help"} & set(argv):
        bare = build_parser(())
        bare.error = _needs_catalog  # type: ignore[method-assign]
        with contextlib.suppress(_NeedsCatalog):  # a command of the catalog, or a mistake
            return bare.parse_args(argv), {}
    commands = {c.name: c for c in cli_commands()}
    return build_parser(tuple(commands.values())).parse_args(argv), commands


def _needs_catalog(message: str) -> None:
    raise _NeedsCatalog(message)


def _dispatch(args: argparse.Namespace, commands: dict[str, Command]) -> int:
    """The view the arguments name: the app, `acp`, `serve`, `run` (attached to a server,
    or here) or a command."""
    if args.command is None:
        return _launch(args)
    if args.command == "acp":
        from agent_tui.acp.stdio import serve_stdio

        return serve_stdio()
    if args.command == "serve":
        from agent_tui.server.serve import serve

        return serve(args.host, args.port, args.token)
    if args.command == "run":
        if args.trust:  # before attaching: the server reads it too
            from agent_tui.config.settings import load_config

            load_config(directory=Path.cwd(), trust=True)
        from agent_tui.attach.target import attach_target

        _enter_worktree(args)  # a worktree's session runs here: leaving it is ours
        if args.worktree is None and (target := attach_target(args)) is not None:
            from agent_tui.attach.run import run_attached

            if (code := run_attached(args, target)) is not None:
                return code
    from agent_tui.provider import remote

    command = commands.get(args.command)
    calls_model = args.command in remote.MODEL_COMMANDS or (command is not None and command.stream)
    # litellm's import (seconds) starts now, on the other core, in a process of its own
    # (provider/worker.py): nothing here waits for it, nor shares a GIL.
    in_process = calls_model and remote.start() is None
    with _uncollected():
        config = _config(args, calls_model)  # what needs no provider is answered before litellm
        if in_process:  # its import thread would starve the preflight of the GIL
            from agent_tui.provider.loader import preload_in_background

            preload_in_background(tokenizer=False)  # before the engine's own imports
        from agent_tui.cli.prompt import dispatch

    return dispatch(args, command, config)


def _launch(args: argparse.Namespace) -> int:
    """The app; with `-w`, in a new worktree, which it asks about for the session it shows
    as it quits. Left after it too: one it never opened a session in (it failed to start)
    or left behind another session goes when unchanged, and a kept one is named."""
    from agent_tui.tui.launch import launch

    _enter_worktree(args)
    try:
        return launch(args)
    finally:
        if args.made_worktree is not None:
            import asyncio

            from agent_tui.cli.prompt import leave_made_worktree
            from agent_tui.config.settings import Config, load_config

            try:
                config = load_config(directory=args.started_in)
            except AgentTuiError:  # what stopped the app: its defaults do to leave it
                config = Config()
            asyncio.run(leave_made_worktree(args, config))


def _enter_worktree(args: argparse.Namespace) -> None:
    """`-w [NAME]`: a new git worktree made and entered before anything reads this
    directory (config, trust, the session's directory, the sandbox's root), as Claude
    Code does; `args.made_worktree` is it, for the session the view starts."""
    args.made_worktree = None
    if getattr(args, "worktree", None) is None:
        return
    if args.session or args.cont:
        raise UsageError(
            "-w starts a new session in a new worktree: it does not go with --continue "
            "or --session (continue a worktree's session from inside its folder)."
        )
    import asyncio
    import os

    from agent_tui.worktrees.git_worktree import create

    args.started_in = Path.cwd()  # where leaving it goes back to
    args.made_worktree = asyncio.run(create(args.started_in, args.worktree or None))
    os.chdir(args.made_worktree.path)


@contextlib.contextmanager
def _uncollected() -> Iterator[None]:
    """No collections while the config and the engine's modules load: they would walk
    what the imports build, all of it kept for the process's life, so it is frozen
    after (as the app does after its first frame, app.on_mount)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        gc.enable()
