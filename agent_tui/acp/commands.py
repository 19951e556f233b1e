"""The slash commands an editor offers: what the app accepts, run as the app runs them.
Their answers are agent text; compaction shows itself through the engine's events."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from agent_tui.context.compaction_plan import render_plan
from agent_tui.context.summary_view import render_summary
from agent_tui.custom_commands import CustomCommand, load_custom_commands
from agent_tui.session.engine import Engine
from agent_tui.session.undo import UndoConflict
from agent_tui.tui.slash_commands import builtin_names, parse

DRY_RUN = "--dry-run"
FORCE = "--force"
LIST = "--list"

BUILTIN: tuple[tuple[str, str, str | None], ...] = (
    (
        "compact",
        "Summarise the conversation now (extra instructions; --dry-run to preview)",
        "[instructions] or --dry-run",
    ),
    ("uncompact", "Take back the newest compaction (the history before it returns)", None),
    ("summary", "Show the summary in force: what was restated after it and what was kept", None),
    ("undo", "Undo the newest turn: restore the files it changed (--force overwrites)", "--force"),
    ("redo", "Redo the turn undone last (--force overwrites)", "--force"),
    (
        "pin",
        "Pin a message or tool result: restated verbatim after every compaction (an id; "
        "none: the agent's newest reply; --list: the pins)",
        "[id] or --list",
    ),
    ("unpin", "Unpin a message or tool result (an id; none: the only pin)", "[id]"),
    ("diff", "Show the files this session changed, as a diff", None),
    ("context", "Show what fills the context window", None),
)


def _command(name: str, description: str, hint: str | None) -> AvailableCommand:
    return AvailableCommand(
        name=name,
        description=description,
        input=AvailableCommandInput(UnstructuredCommandInput(hint=hint)) if hint else None,
    )


async def custom_commands(directory: Path) -> dict[str, CustomCommand]:
    loaded = await asyncio.to_thread(load_custom_commands, directory, builtin_names())
    return loaded.commands


def available(custom: dict[str, CustomCommand]) -> list[AvailableCommand]:
    found = [_command(*spec) for spec in BUILTIN]
    found += [_command(c.name, c.help, "[arguments]") for c in custom.values()]
    return found


@dataclass
class Invocation:
    """A prompt that names a command: `/name args`."""

    name: str
    args: str


def invocation(text: str, custom: dict[str, CustomCommand]) -> Invocation | None:
    """The command a prompt starts with, if it names one agent-tui accepts (else the
    text is sent to the model as typed, as in the app)."""
    found = parse(text)
    if found is None:
        return None
    name, args = found
    name = "compact" if name == "summarize" else name
    if name in {spec[0] for spec in BUILTIN} or name in custom:
        return Invocation(name, args)
    return None


Say = Callable[[str], Awaitable[None]]


async def run_builtin(
    engine: Engine, session_id: str, call: Invocation, model: str | None, say: Say
) -> None:
    """Run a built-in command; what it reports is said as agent text. Errors a person
    can cause (AgentTuiError) propagate as in the app."""
    args = call.args.strip()
    if call.name == "compact":
        if args == DRY_RUN or args.startswith(DRY_RUN + " "):
            extra = args[len(DRY_RUN) :].strip() or None
            plan = await engine.compaction_plan(session_id, extra, model=model)
            await say(render_plan(plan))
            return
        await engine.compact(session_id, args or None, model=model)
        return
    if call.name == "uncompact":
        done = await engine.uncompact(session_id, model=model)
        await say(
            f"Compaction undone: {done.messages} earlier messages are back "
            f"(about {done.estimated:,} of {done.usable:,} usable tokens)."
        )
        return
    if call.name == "summary":  # reading it; correcting it is the app's or `agent-tui summary`
        await say(render_summary(await engine.summary(session_id, model=model)))
        return
    if call.name in ("undo", "redo"):
        act = engine.undo if call.name == "undo" else engine.redo
        try:
            done = await act(session_id, force=args == FORCE)
        except UndoConflict as exc:
            await say(f"{exc}\n\nRun /{call.name} {FORCE} to overwrite your changes.")
            return
        verb = "undone" if call.name == "undo" else "redone"
        count = len(done.files)
        lines = [f"Turn {verb}: {count} file{'s' if count != 1 else ''} restored."]
        lines += [f"- {name}" for name in done.files]
        if done.overwritten:
            lines.append(f"Overwritten (changed by you since): {', '.join(done.overwritten)}")
        if call.name == "undo" and done.prompt:
            lines.append(f"\nIts prompt was:\n\n{done.prompt}")
        await say("\n".join(lines))
        return
    if call.name in ("pin", "unpin"):
        if call.name == "pin" and args == LIST:
            await say((await engine.pin_list(session_id)).render())
            return
        act = engine.pin if call.name == "pin" else engine.unpin
        await say((await act(session_id, args or None)).message())
        return
    if call.name == "diff":
        diff = await engine.session_diff(session_id)
        await say(f"```diff\n{diff}\n```" if diff else "No changes yet.")
        return
    if call.name == "context":
        await say(await engine.context_report(session_id, model=model))
        return
    raise ValueError(f"not a built-in command: {call.name}")
