"""After a sandboxed command: say what the sandbox blocked, in one line naming the
setting that would allow it, and run that one command again outside the sandbox only
when the person says so (asked, with bash on "ask"), `permission.unsandboxed` allows
it, or `run --allow-unsandboxed` was given. Never silently: the result always says
that it ran outside. Plan mode's read-only sandbox is never left."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from agent_tui.sandbox import SandboxPolicy, background_note, created_config_note, explain
from agent_tui.tool.base import PermissionRequest, ToolContext, ToolResult

UNSANDBOXED = "unsandboxed"
"""The permission key of running a blocked command again outside the sandbox."""
SHOWN_BLOCKED_LINES = 20
"""Of a blocked attempt that was then run outside, the last lines kept in the result."""
HEADLESS_HINT = (
    " To run it outside the sandbox: agent-tui run --allow-unsandboxed, or "
    'permission.unsandboxed: "allow".'
)

Rerun = Callable[[], Awaitable[ToolResult]]


async def after_sandbox(
    result: ToolResult, command: str, policy: SandboxPolicy, ctx: ToolContext, rerun: Rerun
) -> ToolResult:
    result = await _blocked_or_noted(result, command, policy, ctx, rerun)
    note = created_config_note(policy)
    return _with(result, {}, note and f"{result.output}\n\n{note}")


async def _blocked_or_noted(
    result: ToolResult, command: str, policy: SandboxPolicy, ctx: ToolContext, rerun: Rerun
) -> ToolResult:
    meta = result.metadata
    failed = meta.get("exit_code") not in (0, None) and not (
        meta.get("timed_out") or meta.get("interrupted")
    )
    line = explain(result.output, policy) if failed else None
    if line is None:
        note = background_note(command)
        return _with(result, {"sandboxed": True}, note and f"{result.output}\n\n{note}")
    blocked = {"sandboxed": True, "sandbox_blocked": line}
    if policy.read_only:
        return _with(result, blocked, f"{result.output}\n\n{line}")
    allowed, why = await _may_run_outside(command, line, ctx)
    if not allowed:
        return _with(result, blocked, f"{result.output}\n\n{line}{why}")
    outside = await rerun()
    earlier = "\n".join(result.output.splitlines()[-SHOWN_BLOCKED_LINES:])
    text = (
        f"In the sandbox:\n{earlier}\n\n{line}\n"
        f"Ran again outside the sandbox ({why}):\n\n{outside.output}"
    )
    return _with(outside, {**blocked, "sandboxed": False, "unsandboxed": why}, text)


async def _may_run_outside(command: str, line: str, ctx: ToolContext) -> tuple[bool, str]:
    """(whether the command runs again outside, why: "the person allowed it once", or
    the sentence added to the blocked line)."""
    level = ctx.permissions.get(UNSANDBOXED, "ask")
    if level == "allow":
        return True, "permission.unsandboxed allows it"
    if level == "deny":
        return False, ' permission.unsandboxed is "deny": it is not run outside the sandbox.'
    if ctx.ask is None:
        return False, HEADLESS_HINT
    reply = await ctx.ask(
        PermissionRequest(
            session_id=ctx.session_id,
            tool=UNSANDBOXED,
            title=f"Run outside the sandbox: {command}",
            detail=f"{line}\n\n{command}",
            input={"command": command},
            question="Run this command again outside the sandbox, with your full rights?",
            call_id=ctx.call_id,
        )
    )
    if reply == "never":  # as for any tool: denied, and not asked again this session
        ctx.permissions[UNSANDBOXED] = "deny"
    if reply in ("deny", "never"):
        return False, " The person chose not to run it outside the sandbox."
    if reply == "always":
        ctx.permissions[UNSANDBOXED] = "allow"
        return True, "the person allowed it for this session"
    return True, "the person allowed it once"


def _with(result: ToolResult, metadata: dict[str, object], output: str | None = None) -> ToolResult:
    update: dict[str, object] = {"metadata": {**result.metadata, **metadata}}
    if output is not None:
        update["output"] = output
    return result.model_copy(update=update)
