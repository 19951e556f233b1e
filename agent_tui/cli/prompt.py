"""`agent-tui run`: one prompt headless, its answer streamed to stdout (tools on stderr,
or one JSON event per line), and the dispatch of the catalog's commands."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from agent_tui.cli.headless import JsonView, TextView
from agent_tui.cli.person_terminal import run_command, watched
from agent_tui.command.catalog import fill_custom
from agent_tui.command.core import Command
from agent_tui.config.layers import merge_permissions
from agent_tui.config.settings import Config
from agent_tui.editor import run_message
from agent_tui.provider.auth import check_credentials
from agent_tui.run_output import READER_GONE_EXIT, START_HINT, exit_code
from agent_tui.session.hook_points import PromptBlocked
from agent_tui.session.opening import asked_session, open_engine
from agent_tui.tool.escalation import UNSANDBOXED

if TYPE_CHECKING:
    from agent_tui.project.custom_commands import CustomCommand
    from agent_tui.records import Worktree
    from agent_tui.session.engine import Engine

MODE_SWITCH = "by running again with --agent build"
"""How a person leaves plan mode with `run` (`--agent plan` prints the plan)."""


def dispatch(args: argparse.Namespace, command: Command | None, config: Config) -> int:
    """Run `run` or a command with the config cli/start.py loaded."""
    if command is None:
        return asyncio.run(_run_and_leave(args, config))
    return asyncio.run(run_command(command, args, config))


async def _run_and_leave(args: argparse.Namespace, config: Config) -> int:
    """`run`; with `-w`, a worktree the run made but never started its session in (it
    failed first) goes too when unchanged."""
    try:
        return await _run(args, config)
    finally:
        left = getattr(args, "session_left", False)  # by _leave_worktree, in the turn
        if getattr(args, "made_worktree", None) is not None and not left:
            await leave_made_worktree(args, config)


async def leave_made_worktree(args: argparse.Namespace, config: Config) -> None:
    """A `-w` worktree its view is done with (`args.made_worktree`): gone with its branch
    when unchanged, else kept and said on stderr with its path and branch."""
    os.chdir(args.started_in)  # out of the worktree, which may go now
    async with open_engine(config, args.command or "app") as engine:
        _say_kept(await engine.worktrees.leave_made(args.made_worktree))


async def _leave_worktree(engine: Engine, args: argparse.Namespace, session_id: str) -> None:
    """The run's session left: its worktree (`-w`, or entered by the enter_worktree
    tool) removed with its branch when the run changed nothing, kept (and said, with
    its path and branch) when it did: nobody is here to ask."""
    args.session_left = True
    if getattr(args, "made_worktree", None) is None:
        _say_kept(await engine.worktrees.leave(session_id))
    else:  # the session may be gone
        os.chdir(args.started_in)  # out of the worktree, which may go now
        _say_kept(await engine.worktrees.leave_made(args.made_worktree))


def _say_kept(kept: Worktree | None) -> None:
    if kept is not None:
        print(
            f"agent-tui: kept the worktree {kept.path} (branch {kept.branch}): it has "
            f"changes. Remove it with: git worktree remove {kept.path} && "
            f"git branch -D {kept.branch}",
            file=sys.stderr,
        )


def _custom_command(text: str) -> tuple[CustomCommand, str] | None:
    """`/NAME args` naming a custom command -> (the command, its arguments); None for
    any other text, which is sent as typed."""
    from agent_tui.command.catalog import builtin_names, parse
    from agent_tui.project.custom_commands import load_custom_commands

    if (called := parse(text)) is None:  # plain text: no command files to read
        return None
    name, args = called
    command = load_custom_commands(Path.cwd(), builtin_names()).commands.get(name.lower())
    return (command, args) if command else None


async def _run(args: argparse.Namespace, config: Config) -> int:
    # `--allow bash` opens the tool; a pattern a config file denies stays denied.
    config.permission = merge_permissions(config.permission, dict.fromkeys(args.allow, "allow"))
    if args.allow_unsandboxed:
        config.permission[UNSANDBOXED] = "allow"
    text = run_message(args.message)
    custom = _custom_command(text)
    model = args.model
    expansion = None
    view = JsonView() if args.format == "json" else TextView()
    async with open_engine(config, args.command) as engine:
        engine.subscribe(view)
        engine.name_mode_switch(MODE_SWITCH)
        if custom is not None:  # its arguments put in; its hooks and `!` lines run in prompt
            text, command_model, note, expansion = fill_custom(engine, *custom, Path.cwd())
            if note is not None:
                print(f"agent-tui: {note}", file=sys.stderr)
            model = model or command_model
        fresh = not (args.session or args.cont)
        if fresh:
            # Fail before creating an empty session the model could never answer.
            agent = engine.workspace(Path.cwd()).agent_catalog().chosen(args.agent)
            await check_credentials(model or agent.model or config.model, config)
        found = await asked_session(engine, Path.cwd(), args.session, args.cont, START_HINT)
        made = getattr(args, "made_worktree", None)
        session = found or await (
            engine.worktrees.new_session(made) if made else engine.new_session(Path.cwd())
        )
        turn = engine.prompt(
            session.id, text, model=model, agent=args.agent, fresh=fresh, expansion=expansion
        )
        try:
            result = await watched(engine, session.id, view, turn)
        except PromptBlocked as exc:  # Claude Code's `-p` says why and exits 0
            print(
                json.dumps({"type": "blocked", "reason": str(exc)})
                if args.format == "json"
                else exc
            )
            return 0
        finally:  # headless, as Claude Code's -p: no background command outlives the turn
            await engine.live(session.id).background.stop_all()
            await _leave_worktree(engine, args, session.id)
        if view.reader_gone:  # `| head` has what it wanted: nobody is left to tell
            return READER_GONE_EXIT
        view.ended(session.id)
    return exit_code(str(result.outcome), result.error)
