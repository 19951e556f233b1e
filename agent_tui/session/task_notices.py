"""The model hears of a background command's end (tool/background.py) at its next step:
before the loop calls the model, each command of the session that ended unheard of (not
read after its end with task_output) becomes a saved user message of synthetic text in a
`<task-notification>`, as Claude Code delivers it: its id, command, status, exit code and
last lines (a stop by the person too; the model's own task_stop and the session's end are
not told). Saved, it stays in the history the next requests send."""

from __future__ import annotations

from html import escape

from agent_tui.engine_context import EngineContext
from agent_tui.ids import message_id, part_id
from agent_tui.records import TextPart, UserMessage
from agent_tui.session.decide import Turn
from agent_tui.tool.background import Running
from agent_tui.tool.task_output import TASK_OUTPUT_TOOL

STATUSES = {"exited": "completed", "failed": "failed", "stopped": "killed", "running": "running"}
"""A status as Claude Code's notifications name it."""


def notification(found: Running) -> str:
    """One ended command as the model reads it."""
    info = found.info
    label = info.description or info.command
    if info.status == "exited":
        summary = f'Background command "{label}" completed (exit code 0)'
    elif info.status == "stopped":
        summary = f'Background command "{label}" was stopped by the person'
    elif info.exit_code is not None and info.exit_code < 0:
        summary = f'Background command "{label}" was killed by signal {-info.exit_code}'
    else:
        summary = f'Background command "{label}" failed with exit code {info.exit_code}'
    lines = found.output.last_lines()
    tail = "\n".join(lines) if lines else "(no output)"
    return (
        "<task-notification>\n"
        f"<task-id>{info.id}</task-id>\n"
        f"<status>{STATUSES[info.status]}</status>\n"
        f"<summary>{escape(summary, quote=False)}</summary>\n"
        f"<command>{escape(info.command, quote=False)}</command>\n"
        f"<last-lines>\n{escape(tail, quote=False)}\n</last-lines>\n"
        f"Its whole output: {TASK_OUTPUT_TOOL} with task_id {info.id}, or the file "
        f"{info.output_path}.\n"
        "</task-notification>"
    )


async def deliver(ctx: EngineContext, turn: Turn) -> bool:
    """Save the notices of commands that ended unheard of, for the agent and model of the
    message being answered; True when there were any (the history changed)."""
    if not (ended := ctx.live(turn.session.id).background.untold()):
        return False
    user = turn.user
    info = UserMessage(
        id=message_id(), session_id=turn.session.id, model=user.model, agent=user.agent
    )
    ids = {"session_id": info.session_id, "message_id": info.id}
    text = "\n".join(notification(found) for found in ended)
    await ctx.add_message(info, TextPart(id=part_id(), **ids, text=text, synthetic=True))
    return True
