"""PreToolUse and PostToolUse around one tool call (hooks/): a blocked call is not run and
the model reads why; a hook's `updatedInput` is what runs; what a hook adds after a call
is appended to the call's result; `continue: false` stops the agent after the call."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_tui.config.hook_config import claude_input, our_input
from agent_tui.engine_context import EngineContext
from agent_tui.errors import ToolError
from agent_tui.provider.stream_events import ToolCallReady, parse_arguments
from agent_tui.tool.base import PermissionReply, PermissionRequest, ToolContext

PATH_FIELDS = ("file_path", "path", "notebook_path")
"""Inputs that name a file or folder: absolute in the event, as Claude Code gives them."""


async def _answered_once(_: PermissionRequest) -> PermissionReply:
    return "once"


async def _payload(
    ctx: EngineContext, session_id: str, directory: Path, call: ToolCallReady
) -> dict[str, Any]:
    tool_input = dict(parse_arguments(call.arguments) or {})
    for name in PATH_FIELDS:
        value = tool_input.get(name)
        if isinstance(value, str) and value:
            tool_input[name] = str(directory / Path(value).expanduser())
    return {
        **await ctx.hook_payload(session_id, directory),
        "tool_name": call.name,
        "tool_input": claude_input(call.name, tool_input),
        "tool_use_id": call.call_id,
    }


async def before(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    call: ToolCallReady,
    tool: ToolContext,
    stop: Callable[[str], None],
) -> ToolCallReady:
    """The call to run: as the model made it, or with a hook's `updatedInput`. Raise
    ToolError when a hook blocks it (the model reads why). `permissionDecision: allow`
    answers the permission question for it, once, and `ask` asks even where config
    allows; a tool the config denies stays denied."""
    if not ctx.hooks.any_for("PreToolUse"):
        return call
    payload = await _payload(ctx, session_id, directory, call)
    result = await ctx.hooks.fire("PreToolUse", directory, payload, subject=call.name)
    if result.stop is not None:
        stop(result.stop)
        raise ToolError(f"A PreToolUse hook stopped the agent before this call: {result.stop}")
    if result.blocked:
        raise ToolError(f"A PreToolUse hook blocked this {call.name} call: {result.reason}")
    if result.ask and tool.permissions.get(call.name) != "deny":
        tool.permissions = {**tool.permissions, call.name: "ask"}
    elif result.allowed:
        tool.ask = _answered_once
    if result.updated_input is None:
        return call
    updated = our_input(call.name, result.updated_input)
    arguments = {**(parse_arguments(call.arguments) or {}), **updated}
    return call.model_copy(update={"arguments": json.dumps(arguments)})


async def after(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    call: ToolCallReady,
    output: str,
    stop: Callable[[str], None],
) -> str:
    """What PostToolUse hooks add for the model (their context, or the reason they
    object to the result), to append to the call's output; "" when nothing."""
    if not ctx.hooks.any_for("PostToolUse"):
        return ""
    payload = await _payload(ctx, session_id, directory, call)
    payload["tool_response"] = {"output": output}
    result = await ctx.hooks.fire("PostToolUse", directory, payload, subject=call.name)
    if result.stop is not None:
        stop(result.stop)
    notes = [f"[PostToolUse hook] {text}" for text in result.context]
    if result.blocked:
        notes.append(f"[PostToolUse hook] {result.reason}")
    return "\n\n".join(notes)
