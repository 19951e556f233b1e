"""The hooks around one tool call (hooks/): PreToolUse before it (a call config denies is
refused first, as Claude Code does, and no hook sees it); PermissionRequest and a
`permission_prompt` Notification when the person would be asked; PostToolUse after it
succeeded, with `tool_response` in Claude Code's shape per tool (hooks/tool_response.py),
and PostToolUseFailure after it failed. A blocked call is not run and the model reads
why; a hook's `updatedInput` is what runs; what a hook adds after a call is appended to
the call's result; `continue: false` stops the agent after the call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_tui.config.claude_permissions import claude_rules
from agent_tui.config.hook_config import claude_input, claude_name, our_input
from agent_tui.engine_context import EngineContext
from agent_tui.errors import PermissionDenied, ToolError
from agent_tui.hooks.runner import HookResult
from agent_tui.hooks.tool_response import Ran, claude_response
from agent_tui.provider.stream_events import ToolCallReady, parse_arguments
from agent_tui.step import task_hooks
from agent_tui.step.edits import read_text
from agent_tui.tool.base import PermissionReply, PermissionRequest, ToolContext, ToolResult
from agent_tui.tool.registry import nobody_to_ask
from agent_tui.tool_lines import failed_exit

PATH_FIELDS = ("file_path", "notebook_path")
"""Inputs that name a file: absolute in the event, as Claude Code gives them (a search's
`path` it passes as the model wrote it)."""
FILE_TOOLS = ("edit", "write")
"""Tools whose response carries the file as it was before (`originalFile`)."""
DEFAULTS = {"edit": {"replace_all": False}}
"""Inputs Claude Code's counterpart always sends, filled in when the model left them out."""
Stop = Callable[[str], None]


async def _answered_once(_: PermissionRequest) -> PermissionReply:
    return "once"


def hook_input(directory: Path, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A call's `tool_input` as hooks read it: Claude Code's names and defaults, and a
    file's path absolute."""
    tool_input = {**DEFAULTS.get(tool, {}), **arguments}
    for name in PATH_FIELDS:
        value = tool_input.get(name)
        if isinstance(value, str) and value:
            tool_input[name] = str(directory / Path(value).expanduser())
    return claude_input(tool, tool_input)


async def _payload(
    ctx: EngineContext, session_id: str, directory: Path, call: ToolCallReady
) -> dict[str, Any]:
    return {
        **await ctx.hook_payload(session_id, directory, effort=True),
        "tool_name": call.name,
        "tool_input": hook_input(directory, call.name, parse_arguments(call.arguments) or {}),
        "tool_use_id": call.call_id,
    }


async def before(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    call: ToolCallReady,
    tool: ToolContext,
    stop: Stop,
) -> ToolCallReady:
    """The call to run: as the model made it, or with a hook's `updatedInput`. Raise
    ToolError when config denies it (before any hook) or a hook blocks it (the model
    reads why). `permissionDecision: allow` answers the permission question for it,
    once, and `ask` asks even where config allows; a tool the config denies stays
    denied."""
    _ask_through_hooks(ctx, session_id, directory, call, tool, stop)
    tool.todo_hooks = task_hooks.todo_hooks(ctx, session_id, directory)
    if not ctx.hooks.any_for("PreToolUse"):
        return call
    refused = ctx.registry.refusal(call.name, call.arguments, tool)
    if refused is not None:  # Claude Code's deny rules answer before its hooks run
        raise PermissionDenied(refused)
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


def _ask_through_hooks(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    call: ToolCallReady,
    tool: ToolContext,
    stop: Stop,
) -> None:
    """Where the person would be asked about the call: PermissionRequest hooks answer
    first (headless too, where nobody else can); else a `permission_prompt`
    Notification goes out as the person is asked."""
    hooks = ctx.hooks
    if not (hooks.any_for("PermissionRequest") or hooks.any_for("Notification")):
        return
    person = tool.ask

    async def ask(request: PermissionRequest) -> PermissionReply:
        if hooks.any_for("PermissionRequest"):
            payload = await _payload(ctx, session_id, directory, call)
            del payload["tool_use_id"]  # Claude Code's PermissionRequest has none
            if request.tool == call.name:  # not a path outside, or running unsandboxed
                payload["permission_suggestions"] = _suggestions(call.name, request)
            result = await hooks.fire("PermissionRequest", directory, payload, subject=call.name)
            if result.stop is not None:
                stop(result.stop)
            if result.blocked:
                raise PermissionDenied(
                    f"A PermissionRequest hook denied this call: {result.reason}"
                )
            if result.allowed:
                return "once"
        if person is None:
            raise nobody_to_ask(call.name)
        message = f"agent-tui needs your permission to use {claude_name(call.name)}"
        told = asyncio.ensure_future(
            notify(ctx, session_id, directory, message, "permission_prompt", "Permission needed")
        )
        try:
            reply = await person(request)
        except BaseException:
            told.cancel()
            raise
        await told
        return reply

    tool.ask = ask


def _suggestions(tool: str, request: PermissionRequest) -> list[dict[str, Any]]:
    """What the person's "always" would allow, as Claude Code's permission update: for
    the rest of the session, where agent-tui keeps that answer."""
    rules = claude_rules(tool, claude_name(tool), request.always_rules)
    return [{"type": "addRules", "rules": rules, "behavior": "allow", "destination": "session"}]


async def notify(
    ctx: EngineContext, session_id: str, directory: Path, message: str, kind: str, title: str
) -> None:
    """Notification: the agent waits for the person (`kind` is `notification_type`)."""
    fields = {"message": message, "title": title, "notification_type": kind}
    await ctx.fire_hook("Notification", session_id, directory, fields, subject=kind)


async def original(ctx: EngineContext, directory: Path, call: ToolCallReady) -> str | None:
    """An edited or written file's text before the call, for PostToolUse's
    `originalFile` (None: no such hook, or no such file)."""
    if call.name not in FILE_TOOLS or not ctx.hooks.any_for("PostToolUse"):
        return None
    name = (parse_arguments(call.arguments) or {}).get("file_path")
    if not isinstance(name, str) or not name:
        return None
    return await asyncio.to_thread(read_text, directory / Path(name).expanduser())


async def after(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    call: ToolCallReady,
    ran: tuple[ToolResult, str | None, int],
    stop: Stop,
) -> str:
    """What PostToolUse hooks add for the model (their context, or the reason they
    object to the result), to append to the call's output; "" when nothing. `ran`: the
    result, the file before (edit, write) and the milliseconds the call took. A bash
    command that exited non-zero goes to PostToolUseFailure instead, as in Claude Code
    (`error`: "Exit code N" and its output), though the model reads it as a result;
    not one whose exit is an answer (grep's 1: no match)."""
    result, before_text, duration_ms = ran
    data = parse_arguments(call.arguments) or {}
    if call.name == "bash" and (code := failed_exit(data, result.metadata)) is not None:
        error = f"Exit code {code}\n{result.output.removesuffix(f'Exit code: {code}').rstrip()}"
        return await failed(ctx, session_id, directory, call, (error, False, duration_ms), stop)
    if not ctx.hooks.any_for("PostToolUse"):
        return ""
    payload = await _payload(ctx, session_id, directory, call)
    facts = Ran(
        payload["tool_input"], result.output, result.metadata, before_text, duration_ms, directory
    )
    payload["tool_response"] = await asyncio.to_thread(claude_response, call.name, facts)
    payload["duration_ms"] = duration_ms
    fired = await ctx.hooks.fire("PostToolUse", directory, payload, subject=call.name)
    return _added("PostToolUse", fired, stop)


async def failed(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    call: ToolCallReady,
    failure: tuple[str, bool, int],
    stop: Stop,
) -> str:
    """PostToolUseFailure after a call that failed as it ran (not one refused before):
    what its hooks add to the error for the model; "" when nothing. `failure`: the
    error, whether the call was interrupted, and the milliseconds it took."""
    if not ctx.hooks.any_for("PostToolUseFailure"):
        return ""
    error, interrupted, duration_ms = failure
    payload = await _payload(ctx, session_id, directory, call)
    payload.update(error=error, is_interrupt=interrupted, duration_ms=duration_ms)
    fired = await ctx.hooks.fire("PostToolUseFailure", directory, payload, subject=call.name)
    return _added("PostToolUseFailure", fired, stop)


def _added(event: str, fired: HookResult, stop: Stop) -> str:
    if fired.stop is not None:
        stop(fired.stop)
    notes = [f"[{event} hook] {text}" for text in fired.context]
    if fired.blocked:
        notes.append(f"[{event} hook] {fired.reason}")
    return "\n\n".join(notes)
