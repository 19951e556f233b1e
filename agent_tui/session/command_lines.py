"""A custom command's `` !`command` `` lines, as Claude Code runs them: each runs before the
prompt is sent, with the bash tool in the session's folder and sandbox under its
permission (the command's `allowed-tools` allow what they name where its file is
trusted: a person's own, or a trusted project's), and its output takes its place. One
that does not run (refused, nobody to ask, a failure to start) stops the command with
why: nothing half-filled is sent."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agent_tui.config.layers import merge_permissions
from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError, UsageError

LINE = re.compile(r"!`([^`\n]+)`")
SCRATCH = "command"
"""The call id of a line's run (it belongs to no message)."""


async def fill(
    ctx: EngineContext,
    directory: Path,
    session_id: str | None,
    body: str,
    allowed: dict[str, Any],
) -> str:
    """`body` with each `` !`command` `` replaced by what the command printed."""
    outputs: dict[str, str] = {}
    for match in LINE.finditer(body):
        command = match.group(1)
        if command not in outputs:
            outputs[command] = await _output(ctx, directory, session_id, command, allowed)
    return LINE.sub(lambda match: outputs[match.group(1)], body)


async def _output(
    ctx: EngineContext,
    directory: Path,
    session_id: str | None,
    command: str,
    allowed: dict[str, Any],
) -> str:
    own = ctx.permissions_for(session_id) if session_id else ctx.config.permission
    tools = ctx.tool_context(
        session_id or "",
        "",
        directory,
        call_id=SCRATCH,
        permissions=merge_permissions(dict(own), allowed),
    )
    try:
        result = await ctx.registry.run("bash", json.dumps({"command": command}), tools)
    except AgentTuiError as exc:
        raise UsageError(f"`{command}` did not run: {exc}") from exc
    return result.output.strip()
