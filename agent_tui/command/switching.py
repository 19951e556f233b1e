"""/sessions, /new, /fork and /export: list the sessions and go to one, start one, fork
one up to a message, export one as JSON."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_tui.command.core import (
    APP,
    CLI,
    Call,
    Command,
    NoArgs,
    Result,
    Row,
    Rows,
    Text,
    flag,
    option,
    present,
    word,
)
from agent_tui.ids import local_time

LISTED = 200
"""Sessions listed (the newest the person started, each with its subagents')."""
NO_SESSIONS = 'No sessions yet. Start one with: agent-tui run "..." or agent-tui'


@dataclass
class SessionsArgs(NoArgs):
    here: bool = flag("only this directory's sessions")


async def _sessions(call: Call, args: SessionsArgs) -> Result | None:
    rows = await session_rows(call, str(call.directory) if args.here else None)
    chosen = await call.person.choose(Rows("Sessions", rows, NO_SESSIONS, "sessions"))
    if chosen is not None and chosen != call.session_id:
        await call.person.open_session(await call.engine.queries.session(chosen), None)
    return None


async def session_rows(call: Call, directory: str | None) -> list[Row]:
    """Every session listed, subagents' under their parent, with its figures as data."""
    from agent_tui.context.window_usage import context_usage

    rows = []
    for listed in await call.engine.queries.listed(directory, LISTED):
        session, summary, preparer = listed.session, listed.summary, listed.preparer
        usage = context_usage(summary.last_assistant, summary.cost)
        data: dict[str, Any] = {
            **session.model_dump(include={"id", "parent_id", "forked_from"}),
            "depth": listed.depth,
            **session.model_dump(include={"title", "directory", "created", "updated"}),
            "worktree": session.worktree.model_dump() if session.worktree else None,
            "messages": summary.messages,
            "compactions": summary.compactions,
            "prepared_summaries": {
                "prepared": summary.summaries_prepared,
                "used": summary.summaries_used,
                "discarded": summary.summaries_discarded,
                "running": preparer.model_dump() if preparer is not None else None,
            },
            "context": usage.model_dump(),
            "tokens": {
                "input": summary.input_tokens,
                "cache_read": summary.cache_read,
                "cache_write": summary.cache_write,
            },
        }
        percent = f"{usage.percent:.0f}%" if usage.percent is not None else "—"
        detail = f"{local_time(session.updated)}  {summary.messages:>4} msgs  ctx {percent:>4}  "
        current = session.id == call.session_id
        title, where = session.title or "(untitled)", session.directory
        if (worktree := session.worktree) is not None:  # its branch, and whether it is gone
            where += f"  (worktree {worktree.branch}{', removed' if worktree.removed else ''})"
        rows.append(Row(session.id, title, detail + where, current, listed.depth, data))
    return rows


@dataclass
class ForkArgs(NoArgs):
    message_id: str | None = word("MSG_ID", "the last message copied (default: all)")


async def _fork(call: Call, args: ForkArgs) -> Result:
    from agent_tui.session.fork import fork

    forked = await fork(await call.scope(), args.message_id)
    await call.person.open_session(forked.session, forked.retype)
    said = f"Forked into a new session, {forked.session.id}; the original is untouched."
    if forked.retype is not None:  # before the person's own message: its words back
        said += " It ends before your message, which was not copied."
    return Text(said)


@dataclass
class NewArgs(NoArgs):
    worktree: str | None = option(
        "NAME",
        "in a new git worktree, .claude/worktrees/NAME on the branch worktree-NAME "
        "(a generated name without one)",
        short="w",
    )


async def _new(call: Call, args: NewArgs) -> None:
    worktrees = call.engine.worktrees
    made = None
    if args.worktree is not None:
        made = await worktrees.make(call.directory, args.worktree or None)
    await call.engine.start_afresh(call.session_id)
    session = None if made is None else await worktrees.new_session(made)
    await call.person.open_session(session, None)
    if made is not None and call.engine.workspace(Path(made.path)).asks_trust:
        # Its config is not the trusted main checkout's (the trust carries over only when
        # it is the same content): asked about as any untrusted project.
        from agent_tui.command.trusting import TRUST, TrustArgs  # its Command stays its module's

        await present(call.person, TRUST, await TRUST.run(call, TrustArgs(directory=made.path)))


@dataclass
class ExportArgs(NoArgs):
    session_id: str | None = word("SESSION_ID", "the session (default: this one)")
    output: str | None = option("PATH", "write it to this file (the CLI's default: stdout)")


@dataclass
class Exported:
    json: str
    path: Path | None

    def message(self) -> str:
        return f"Exported to {self.path}" if self.path else self.json


async def _export(call: Call, args: ExportArgs) -> Result:
    import asyncio

    queries = call.engine.queries
    session_id = args.session_id and (await queries.find_session(args.session_id)).id
    data = await queries.export(session_id or call.session())
    text = data.model_dump_json(indent=2)
    output = args.output
    if output is None and call.person.view != CLI:  # a file here, named for the session
        output = f"agent-tui-{data.session.id}.json"
    if output is None or output == "-":
        return Exported(text, None)
    path = call.directory / output
    await asyncio.to_thread(path.write_text, text, "utf-8")
    return Exported(text, path)


SESSIONS = Command(
    "sessions",
    "List the sessions (the app switches to the one chosen)",
    _sessions,
    SessionsArgs,
    keybind="sessions",
    session=False,
)
FORK = Command(
    "fork",
    "Fork the session: a new one with its history up to a message (an id; default: all "
    "of it), the original untouched",
    _fork,
    ForkArgs,
)
NEW = Command(
    "new",
    "Start a new session (-w [NAME]: in a new git worktree)",
    _new,
    NewArgs,
    keybind="new_session",
    session=False,
    views=frozenset({APP}),
)
EXPORT = Command(
    "export",
    "Export a session as JSON (the app writes a file here; the CLI prints it)",
    _export,
    ExportArgs,
    session=False,
)
