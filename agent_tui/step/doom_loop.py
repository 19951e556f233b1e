"""The doom-loop check: the same tool call with the same input several times in a row
asks the person (the app) or stops the step (headless)."""

from __future__ import annotations

import json
from typing import Any

from agent_tui.engine_context import EngineContext
from agent_tui.tool.base import PermissionRequest

DOOM_LOOP = "doom_loop"
"""The permission key the person's 'always' answer is stored under."""


def call_signature(tool: str, arguments: dict) -> str:
    return tool + json.dumps(arguments, sort_keys=True)


async def repeat_refusal(
    ctx: EngineContext,
    session_id: str,
    recent_calls: list[str],
    tool: str,
    tool_input: dict[str, Any],
    raw_arguments: str,
    permissions: dict[str, Any],
) -> str | None:
    """Record the call; None when it may run, else the reason it is stopped."""
    signature = call_signature(tool, tool_input)
    recent_calls.append(signature)
    limit = ctx.config.doom_loop
    if not limit or recent_calls[-limit:] != [signature] * limit:
        return None  # the check is off, or not `limit` times this call in a row
    if permissions.get(DOOM_LOOP) == "allow":
        return None
    if ctx.ask is None:
        return (
            f"The {tool} tool was called {limit} times in a row with the same input; "
            "stopped to avoid a loop. Try a different approach (config doom_loop sets "
            "the limit, 0 turns the check off)."
        )
    reply = await ctx.ask(
        PermissionRequest(
            session_id=session_id,
            tool=DOOM_LOOP,
            title=f"{tool} called {limit} times in a row with the same input",
            detail=raw_arguments,
            input=tool_input,
        )
    )
    if reply == "always":
        permissions[DOOM_LOOP] = "allow"
    if reply not in ("deny", "never"):
        return None
    return f"The person stopped a repeated {tool} call ({limit} times in a row)."
