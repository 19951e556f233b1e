"""`!command`: a shell command the person runs themselves, saved for the model to read."""

from __future__ import annotations

import asyncio

from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError
from agent_tui.ids import now_ms, part_id
from agent_tui.records import (
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
    ToolStateRunning,
    ToolTime,
    UserMessage,
)
from agent_tui.tool.base import ToolContext


def shell_text(command: str, output: str) -> str:
    """The synthetic user text saved with a `!command` (the model reads it with the next
    message; the view shows the tool line instead)."""
    return (
        f"The person ran this command in the shell themselves:\n<command>\n{command}\n"
        f"</command>\n<output>\n{output}\n</output>"
    )


async def run_person_command(
    ctx: EngineContext,
    info: UserMessage,
    command: str,
    tools: ToolContext,
    saved: asyncio.Event | None = None,
) -> ToolPart:
    """Save `info` with a running bash part (then set `saved`), run the command with the
    bash tool, then save its result and the text the model reads."""
    arguments = {"command": command}
    start = now_ms()
    ids = {"session_id": info.session_id, "message_id": info.id}
    running = ToolStateRunning(input=arguments, title=command, time=ToolTime(start=start))
    part = ToolPart(id=part_id(), **ids, call_id=tools.call_id, tool="bash", state=running)
    await ctx.add_message(info, part)
    if saved is not None:
        saved.set()
    try:
        result = await ctx.registry.run("bash", arguments, tools)
    except AgentTuiError as exc:
        part.state = ToolStateError(
            input=arguments, error=str(exc), time=ToolTime(start=start, end=now_ms())
        )
        output = str(exc)
    else:
        part.state = ToolStateCompleted(
            input=arguments,
            output=result.output,
            title=command,
            metadata=result.metadata,
            time=ToolTime(start=start, end=now_ms()),
        )
        output = result.output
    await ctx.save_part(part)
    text = shell_text(command, output)
    await ctx.save_part(TextPart(id=part_id(), **ids, text=text, synthetic=True))
    return part
