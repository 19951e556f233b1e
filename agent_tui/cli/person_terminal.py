"""The CLI's adapter of a command (command/core.py): a person at a terminal or a script.
Results and documents are printed (`--json`: what they give, as JSON), a question is
asked on a terminal (else the option that answers it is named), rows are listed, a
session opened prints its id, a prompt streams as `run` does."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Awaitable
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from agent_tui.cli.headless import TextView
from agent_tui.command.core import CLI, Call, Command, Result, Rows, build
from agent_tui.config.settings import Config
from agent_tui.errors import NotFoundError
from agent_tui.records import Session
from agent_tui.run_output import READER_GONE_EXIT, START_HINT, PipeView, exit_code
from agent_tui.session.engine import Engine
from agent_tui.session.expansion import Expansion
from agent_tui.session.loop import LoopResult
from agent_tui.session.opening import asked_session, open_engine

T = TypeVar("T")


class CliPerson:
    view = CLI
    asks = False

    def __init__(self, engine: Engine | None, session_id: str | None, json: bool) -> None:
        self.engine, self.session_id, self.json = engine, session_id, json
        self.said_id = False
        """A session's id went to stdout: what is said goes to stderr."""
        self.result: LoopResult | None = None

    def print(self, text: str) -> None:
        """stdout, or stderr once a session's id went there (it stays the id alone)."""
        print(text, file=sys.stderr if self.said_id else sys.stdout)

    async def say(self, text: str) -> None:
        self.print(text)

    async def show(self, title: str, result: Result) -> None:
        await self.say(result.message())

    async def confirm(self, question: str, detail: str, yes: str, flag: str) -> bool:
        print(detail)
        if not sys.stdin.isatty():
            print(f"No terminal to ask on: add {flag} to answer yes.", file=sys.stderr)
            return False
        answer = await asyncio.to_thread(input, f"{question} [y/N] ")
        return answer.strip().lower() in ("y", "yes")

    async def choose(self, rows: Rows) -> str | None:
        print(as_json(rows) if self.json else rows.message())  # listed: none is chosen here
        return None

    async def open_session(self, session: Session | None, retype: str | None) -> None:
        if session is not None:
            print(session.id)  # `agent-tui run -s ID` continues it
            self.said_id = True
        await self.retype(retype)

    async def edit(self, title: str, text: str, original: str) -> str | None:
        from agent_tui.editor import edit_text

        return await edit_text(text, f"{title.lower().replace(' ', '-')}.md")

    async def retype(self, text: str | None) -> None:
        if text:
            print(f"Your message was:\n{text}", file=sys.stderr)

    async def send(self, text: str, model: str | None, expansion: Expansion) -> None:
        assert self.engine is not None and self.session_id is not None
        self.result = await self.engine.prompt(
            self.session_id, text, model=model, expansion=expansion
        )

    async def use_model(self, model: str) -> None:
        pass  # -m MODEL

    async def leave(self) -> None:
        pass


async def _session_of(engine: Engine, command: Command, args: argparse.Namespace) -> str | None:
    """The session `command` acts on (a command that starts one: a new one unless one is
    named, else the directory's newest); None for one that may run without a session
    when the directory has none yet."""
    named = bool(args.session or args.cont)
    directory = Path.cwd()
    latest = named or not command.starts
    try:
        found = await asked_session(engine, directory, args.session, latest, START_HINT)
        return (found or await engine.new_session(directory)).id
    except NotFoundError:
        if command.session_optional and not named:
            return None
        raise


def typed_args(command: Command, args: argparse.Namespace) -> Any:
    values = {a: getattr(args, a, None) for a in command.args.__dataclass_fields__}
    return build(command, {k: " ".join(v) if isinstance(v, list) else v for k, v in values.items()})


async def run_command(command: Command, args: argparse.Namespace, config: Config) -> int:
    """Run `command` as typed on the command line; its exit code."""
    typed = typed_args(command, args)
    if not command.engine:
        call = _call(None, None, args)
        return _report(await command.run(call, typed), call, args)
    async with open_engine(config, command.name) as engine:
        session_id = await _session_of(engine, command, args) if command.session else None
        call = _call(engine, session_id, args)
        if not command.stream or args.json:
            return _report(await command.run(call, typed), call, args)
        view = TextView(show_summaries=True)  # the summary, or a custom command's answer
        engine.subscribe(view)
        result = await watched(engine, call.session(), view, command.run(call, typed))
        return READER_GONE_EXIT if view.reader_gone else _report(result, call, args)


async def watched(engine: Engine, session_id: str, view: PipeView, turn: Awaitable[T]) -> T:
    """`turn`, its events shown by `view`: the first Ctrl+C interrupts the step (what
    streamed is kept; the second quits), and a reader that closed the pipe stops it."""
    loop = asyncio.get_running_loop()

    def on_interrupt() -> None:
        engine.abort(session_id)
        loop.remove_signal_handler(signal.SIGINT)

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, on_interrupt)
    view.on_reader_gone = lambda: engine.abort(session_id)
    try:
        return await turn
    finally:
        view.close()


def _call(engine: Engine | None, session_id: str | None, args: argparse.Namespace) -> Call:
    model = getattr(args, "model", None)
    return Call(engine, CliPerson(engine, session_id, args.json), Path.cwd(), session_id, model)


def _report(result: Any, call: Call, args: argparse.Namespace) -> int:
    """Print what a command gave; its exit code."""
    person = call.person
    assert isinstance(person, CliPerson)
    if args.json and result is not None:
        print(as_json(result))
    elif result is not None and (text := result.message()):
        person.print(text)
    loop = getattr(result, "result", None) or person.result
    code = exit_code(str(loop.outcome), loop.error) if isinstance(loop, LoopResult) else 0
    return code or getattr(result, "exit_code", 0)


def as_json(result: Any) -> str:
    """What a result gives, for scripts: its model, its rows' data, else its message."""
    if hasattr(result, "model_dump_json"):
        return str(result.model_dump_json(indent=2))
    if isinstance(result, Rows):
        data: Any = [row.data for row in result.rows]
    elif hasattr(result, "data"):
        data = result.data
    elif is_dataclass(result):
        data = {"message": result.message(), **asdict(result)}
    else:
        data = {"message": result.message()}
    return json.dumps(data, indent=2, ensure_ascii=False, default=str)
