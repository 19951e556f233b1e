"""Resolve tool paths against the working directory; guard paths outside it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agent_tui.errors import PermissionDenied
from agent_tui.tool.base import PermissionRequest, ToolContext

EXTERNAL_DIRECTORY = "external_directory"
"""The permission key for paths outside the working directory."""


def absolute_path(ctx: ToolContext, p: str | Path | None) -> Path:
    """`p` made absolute against ctx.directory (`~` expanded, symlinks resolved)."""
    if p is None or str(p).strip() == "":
        return ctx.directory.resolve()
    return (ctx.directory / Path(p).expanduser()).resolve()  # an absolute `p` stays itself


def is_inside(ctx: ToolContext, path: Path) -> bool:
    return path.is_relative_to(ctx.directory.resolve())


def display_path(ctx: ToolContext, path: Path) -> str:
    """Relative to the working directory when inside it, absolute otherwise."""
    root = ctx.directory.resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


async def resolve_path(ctx: ToolContext, p: str | Path | None) -> Path:
    """Resolve `p`; a path outside the working directory needs `external_directory` permission.

    `always` from the person allows every outside path for the rest of the session.
    """
    path = absolute_path(ctx, p)
    if is_inside(ctx, path):
        return path
    level = ctx.permissions.get(EXTERNAL_DIRECTORY, "ask")
    if level == "allow":
        return path
    if level == "deny":
        raise PermissionDenied(
            f"Access to {path} is denied: it is outside the working directory "
            f'{ctx.directory} and permission.{EXTERNAL_DIRECTORY} is "deny" in the config.'
        )
    if ctx.ask is None:
        raise PermissionDenied(
            f"{path} is outside the working directory {ctx.directory}, and there is no one to "
            "approve access to it. To allow paths outside the working directory, set "
            f'"permission": {{"{EXTERNAL_DIRECTORY}": "allow"}} in agent-tui.json.'
        )
    reply = await ctx.ask(
        PermissionRequest(
            session_id=ctx.session_id,
            tool=EXTERNAL_DIRECTORY,
            title=f"Access {path} (outside the working directory)",
            detail=str(path),
            input={"path": str(path)},
            call_id=ctx.call_id,
        )
    )
    if reply == "never":
        ctx.permissions[EXTERNAL_DIRECTORY] = "deny"
    if reply in ("deny", "never"):
        raise PermissionDenied(
            f"The person denied access to {path}, which is outside the working directory."
        )
    if reply == "always":
        ctx.permissions[EXTERNAL_DIRECTORY] = "allow"
    return path


async def writable_path(ctx: ToolContext, p: str | Path | None) -> Path:
    """`resolve_path` for a tool that writes: never into what the sandbox keeps read-only
    for commands (git hooks and config, a worktree's pointers, agent-tui's project
    config). git and agent-tui run those later outside the sandbox, so only the person
    changes them; a link to one (made by a command) is followed to it and refused too."""
    path = await resolve_path(ctx, p)
    sandbox = ctx.sandbox
    if sandbox is None or not sandbox.config.enabled:
        return path
    protected = await asyncio.to_thread(sandbox.protected_in, ctx.directory)
    if any(path.is_relative_to(kept) for kept in protected):
        raise PermissionDenied(
            f"{path} is read-only for the agent: git hooks and config, the project's "
            "config and the scripts its hooks run are run later outside the sandbox, so "
            "only the person changes them (sandbox.enabled: false lifts this)."
        )
    return path
