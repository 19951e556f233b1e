"""PreToolUse and PostToolUse around one tool call (hooks/): a blocked call is not run and
the model reads why; what a hook adds after a call is appended to the call's result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_tui.engine_context import EngineContext
from agent_tui.errors import ToolError
from agent_tui.provider.stream_events import ToolCallReady, parse_arguments
from agent_tui.tool.base import PermissionReply, PermissionRequest, ToolContext


async def _answered_once(_: PermissionRequest) -> PermissionReply:
    return "once"


def _payload(session_id: str, call: ToolCallReady) -> dict[str, Any]:
    return {
        "session_id": session_id,
        "transcript_path": None,
        "tool_name": call.name,
        "tool_input": parse_arguments(call.arguments) or {},
        "tool_use_id": call.call_id,
    }


async def before(
    ctx: EngineContext, session_id: str, directory: Path, call: ToolCallReady, tool: ToolContext
) -> None:
    """Raise ToolError when a PreToolUse hook blocks the call (the model reads why). A
    hook's `permissionDecision: allow` answers the permission question for it, once;
    a tool the config denies stays denied."""
    if not ctx.hooks.any_for("PreToolUse"):
        return
    result = await ctx.hooks.fire(
        "PreToolUse", directory, _payload(session_id, call), subject=call.name
    )
    if result.blocked:
        raise ToolError(f"A PreToolUse hook blocked this {call.name} call: {result.reason}")
    if result.allowed:
        tool.ask = _answered_once


async def after(
    ctx: EngineContext, session_id: str, directory: Path, call: ToolCallReady, output: str
) -> str:
    """What PostToolUse hooks add for the model (their context, or the reason they
    object to the result), to append to the call's output; "" when nothing."""
    if not ctx.hooks.any_for("PostToolUse"):
        return ""
    payload = {**_payload(session_id, call), "tool_response": {"output": output}}
    result = await ctx.hooks.fire("PostToolUse", directory, payload, subject=call.name)
    notes = [f"[PostToolUse hook] {text}" for text in result.context]
    if result.blocked:
        notes.append(f"[PostToolUse hook] {result.reason}")
    return "\n\n".join(notes)
