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

from agent_tui.config.layers import merge_permissions
from agent_tui.engine_context import EngineContext
from agent_tui.errors import AgentTuiError, UsageError
from agent_tui.records import Session
from agent_tui.session.expansion import Expansion, ExpansionFailed

LINE = re.compile(r"!`([^`\n]+)`")
SCRATCH = "command"
"""The call id of a line's run (it belongs to no message)."""


async def fill(ctx: EngineContext, session: Session, body: str, expansion: Expansion) -> str:
    """`body` with each `` !`command` `` replaced by what the command printed;
    ExpansionFailed when one does not run."""
    if commands := dict.fromkeys(match.group(1) for match in LINE.finditer(body)):
        await ctx.workspace.announce_sandbox()
    try:
        outputs = {command: await _output(ctx, session, command, expansion) for command in commands}
    except UsageError as exc:
        raise ExpansionFailed(f"/{expansion.name}: {exc}") from exc
    return LINE.sub(lambda match: outputs[match.group(1)], body)


async def _output(ctx: EngineContext, session: Session, command: str, expansion: Expansion) -> str:
    own = ctx.permissions_for(session.id)
    tools = ctx.tool_context(
        session.id,
        "",
        Path(session.directory),
        call_id=SCRATCH,
        permissions=merge_permissions(dict(own), expansion.allowed),
    )
    try:
        result = await ctx.registry.run("bash", json.dumps({"command": command}), tools)
    except AgentTuiError as exc:
        raise UsageError(f"`{command}` did not run: {exc}") from exc
    return result.output.strip()
