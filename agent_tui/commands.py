"""Headless commands: run, sessions, export, compact, uncompact, fork, pin, summary, undo,
redo, context."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import signal
import sys
from pathlib import Path

from agent_tui.command.run import execute
from agent_tui.config import Config, load_config
from agent_tui.context import preparing
from agent_tui.context.summary_view import NO_COMPACTION
from agent_tui.context.usage import context_usage
from agent_tui.editor import edit_text, read_text_arg, run_message
from agent_tui.errors import NotFoundError, UsageError
from agent_tui.headless import READER_GONE_EXIT, JsonView, TextView
from agent_tui.provider import remote
from agent_tui.provider.auth import check_credentials
from agent_tui.provider.defaults import choose_model
from agent_tui.provider.loader import preload_in_background
from agent_tui.session.engine import Engine
from agent_tui.session.loop import LoopResult
from agent_tui.session.opening import open_engine
from agent_tui.session.undo import FILES_NAMED
from agent_tui.storage.models import Session
from agent_tui.storage.sessions import session_tree
from agent_tui.tool.escalation import UNSANDBOXED


async def resolve_session(
    engine: Engine, session_id: str | None, cont: bool, *, create: bool
) -> Session:
    db = engine.ctx.db
    directory = Path.cwd()
    if session_id:
        return await db.find_session_by_prefix(session_id)
    if cont or not create:
        session = await db.latest_session(str(directory))
        if session is None:
            raise NotFoundError(
                f'No session to continue in {directory}. Start one with: agent-tui run "..." '
                "(or list all sessions with: agent-tui sessions)."
            )
        return session
    return await engine.new_session(directory)


def dispatch(args: argparse.Namespace, config: Config | None = None) -> int:
    """Run a headless command; `config`: already loaded (and its model chosen) by the
    CLI's preflight."""
    calls_model = args.command in remote.MODEL_COMMANDS
    if calls_model and remote.current() is None:
        preload_in_background()  # overlap litellm's import with config and DB work
    chosen = config is not None
    if config is None:
        config = load_config({"model": args.model} if getattr(args, "model", None) else None)
    handler = {
        "run": _run,
        "sessions": _sessions,
        "export": _export,
        "fork": _fork,
        "compact": _compact,
        "uncompact": _uncompact,
        "pin": _pin,
        "summary": _summary,
        "undo": _turn,
        "redo": _turn,
        "context": _context,
    }[args.command]

    async def main() -> int:
        # No model in the config: the keys present (or a local server) pick it.
        if not chosen:
            await choose_model(config, probe=calls_model)
        return await handler(args, config)

    return asyncio.run(main())


def _exit_code(result: LoopResult | None) -> int:
    if result is None:
        return 0
    if result.outcome == "aborted":
        print("agent-tui: interrupted; what was streamed is saved.", file=sys.stderr)
        return 130
    if result.outcome == "error":
        print(f"agent-tui: {result.error or 'the run failed.'}", file=sys.stderr)
        return 1
    return 0


def _install_interrupt(engine: Engine, session_id: str) -> None:
    """First Ctrl+C interrupts the step (streamed text is kept); the second quits."""
    loop = asyncio.get_running_loop()

    def on_interrupt() -> None:
        engine.abort(session_id)
        loop.remove_signal_handler(signal.SIGINT)

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_interrupt)


def _expand_custom_command(text: str) -> tuple[str, str | None]:
    """`/NAME args` naming a custom command -> (its expanded body, its model); any other
    text is sent as typed."""
    from agent_tui.command.table import builtin_names, parse
    from agent_tui.custom_commands import load_custom_commands

    invocation = parse(text)
    if invocation is None:
        return text, None
    loaded = load_custom_commands(Path.cwd(), builtin_names())
    command = loaded.commands.get(invocation[0].lower())
    if command is None:
        return text, None
    return command.expand(invocation[1]), command.model


async def _run(args: argparse.Namespace, config: Config) -> int:
    for tool in args.allow:
        config.permission[tool] = "allow"
    if args.allow_unsandboxed:
        config.permission[UNSANDBOXED] = "allow"
    text, command_model = _expand_custom_command(run_message(args.message))
    model = args.model or command_model
    view = JsonView() if args.format == "json" else TextView()
    async with open_engine(config, args.command) as engine:
        engine.ctx.bus.subscribe(view)
        if not (args.session or args.cont):
            # Fail before creating an empty session the model could never answer.
            agent = engine.primary_agent(args.agent, Path.cwd())  # before a session exists
            await check_credentials(model or agent.model or config.model, config)
        session = await resolve_session(engine, args.session, args.cont, create=True)
        _install_interrupt(engine, session.id)
        view.on_reader_gone = lambda: engine.abort(session.id)
        try:
            result = await engine.prompt(session.id, text, model=model, agent=args.agent)
        finally:
            view.close()
        if view.reader_gone:  # `| head` has what it wanted: nobody is left to tell
            return READER_GONE_EXIT
        if args.format == "text":
            print(f"session {session.id}", file=sys.stderr)
    return _exit_code(result)


async def _compact(args: argparse.Namespace, config: Config) -> int:
    if args.dry_run:
        async with open_engine(config, args.command) as engine:
            session = await resolve_session(engine, args.session, args.cont, create=False)
            plan = await engine.compaction_plan(
                session.id, " ".join(args.instructions) or None, model=args.model, up_to=args.up_to
            )
        print(plan.message())
        return 0
    view = TextView(show_summaries=True)
    async with open_engine(config, args.command) as engine:
        engine.ctx.bus.subscribe(view)
        session = await resolve_session(engine, args.session, args.cont, create=False)
        _install_interrupt(engine, session.id)
        view.on_reader_gone = lambda: engine.abort(session.id)
        try:
            result = await engine.compact(
                session.id, " ".join(args.instructions) or None, model=args.model, up_to=args.up_to
            )
        finally:
            view.close()
    return READER_GONE_EXIT if view.reader_gone else _exit_code(result)


async def _sessions(args: argparse.Namespace, config: Config) -> int:
    async with open_engine(config, args.command) as engine:
        db = engine.ctx.db
        sessions = await db.list_sessions(str(Path.cwd()) if args.here else None)
        summaries = await db.session_summaries([s.id for s in sessions])
        ctx = engine.ctx
    rows = []
    for session, depth in session_tree(sessions):  # subagents' sessions under their parent
        summary = summaries[session.id]
        preparer = preparing.holder(ctx, session.id)  # who writes its summary in the background
        rows.append(
            {
                "id": session.id,
                "parent_id": session.parent_id,
                "forked_from": session.forked_from,
                "depth": depth,
                "title": session.title,
                "directory": session.directory,
                "created": session.created,
                "updated": session.updated,
                "messages": summary.messages,
                "compactions": summary.compactions,
                "prepared_summaries": {
                    "prepared": summary.summaries_prepared,
                    "used": summary.summaries_used,
                    "discarded": summary.summaries_discarded,
                    "running": preparer.model_dump() if preparer is not None else None,
                },
                "context": context_usage(summary.last_assistant, summary.cost).model_dump(),
                "tokens": {
                    "input": summary.input_tokens,
                    "cache_read": summary.cache_read,
                    "cache_write": summary.cache_write,
                },
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print('No sessions yet. Start one with: agent-tui run "..." or agent-tui')
        return 0
    for row in rows:
        usage = row["context"]
        percent = f"{usage['percent']:.0f}%" if usage["percent"] is not None else "—"
        updated = dt.datetime.fromtimestamp(row["updated"] / 1000)
        print(
            f"{'  ' * row['depth']}{row['id']}  {updated:%Y-%m-%d %H:%M}  "
            f"{row['messages']:>4} msgs  "
            f"{percent:>4}  {row['title'] or '(untitled)'}  [{row['directory']}]"
        )
    return 0


async def _uncompact(args: argparse.Namespace, config: Config) -> int:
    async with open_engine(config, args.command) as engine:
        session = await resolve_session(engine, args.session, args.cont, create=False)
        done = await engine.uncompact(session.id, model=args.model)
    print(done.message())
    return 0


async def _pin(args: argparse.Namespace, config: Config) -> int:
    if args.list and args.item:
        raise UsageError(
            f"agent-tui pin --list takes no id (got {args.item!r}): it lists every pin. "
            "To pin: agent-tui pin --continue ID; to unpin: agent-tui pin --continue --remove ID."
        )
    async with open_engine(config, args.command) as engine:
        session = await resolve_session(engine, args.session, args.cont, create=False)
        if args.list:
            print((await engine.pin_list(session.id)).render())
            return 0
        act = engine.unpin if args.remove else engine.pin
        change = await act(session.id, args.item)
    print(change.message())
    return 0


async def _summary(args: argparse.Namespace, config: Config) -> int:
    changing = args.edit or args.set_file is not None or args.revert
    async with open_engine(config, args.command) as engine:
        session = await resolve_session(engine, args.session, args.cont, create=False)
        view = await engine.summary(session.id)
        note = None
        if changing:
            if not view.compacted or view.summary_id is None:
                raise UsageError(NO_COMPACTION)
            if args.revert:
                text = None
            elif args.set_file is not None:
                text = await read_text_arg(args.set_file, "--set-file")
            else:
                text = await edit_text(view.text, f"summary-{view.summary_id}.md")
            done = await engine.edit_summary(session.id, view.summary_id, text)
            note = done.message()
            view = await engine.summary(session.id)
    if args.json:
        print(view.model_dump_json(indent=2))
        if note:
            print(f"agent-tui: {note}", file=sys.stderr)
    else:
        print(note or view.message())
    return 0


async def _turn(args: argparse.Namespace, config: Config) -> int:
    """undo or redo."""
    undo = args.command == "undo"
    async with open_engine(config, args.command) as engine:
        session = await resolve_session(engine, args.session, args.cont, create=False)
        restore = engine.undo if undo else engine.redo
        done = await restore(session.id, force=args.force)
    print(done.message())  # names the files and what was overwritten, as every view says
    if len(done.files) > FILES_NAMED:  # "and N more": here, the whole list
        print("\n".join(f"  {name}" for name in done.files))
    if undo and done.prompt:
        print(f"Its prompt was:\n{done.prompt}")
    return 0


async def _export(args: argparse.Namespace, config: Config) -> int:
    async with open_engine(config, args.command) as engine:
        session = await engine.ctx.db.find_session_by_prefix(args.session_id)
        export = await engine.ctx.db.export_session(session.id)
    print(export.model_dump_json(indent=2))
    return 0


async def _fork(args: argparse.Namespace, config: Config) -> int:
    """Prints the new session's id (`agent-tui run -s ID` continues it)."""
    async with open_engine(config, args.command) as engine:
        session = await resolve_session(engine, args.session, args.cont, create=False)
        forked = await engine.fork(session.id, args.message_id)
    print(forked.session.id)
    if forked.retype is not None:
        print(
            f"Forked before your message, which was not copied:\n{forked.retype}", file=sys.stderr
        )
    return 0


async def _context(args: argparse.Namespace, config: Config) -> int:
    async with open_engine(config, args.command) as engine:
        session = await resolve_session(engine, args.session, args.cont, create=False)
        result = await execute(engine, session.id, "context", model=args.model)
    print(result.message())
    return 0
