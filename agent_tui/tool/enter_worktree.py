"""The enter_worktree tool (Claude Code's EnterWorktree): the model asks, and the person
approves, to move this session into a new git worktree. The session's directory, sandbox
root and tools' working directory are the worktree's from the next step on; the main
checkout is left as it is. The moving is the session layer's (`ToolContext.worktrees`)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult

ENTER_WORKTREE_TOOL = "enter_worktree"


class EnterWorktreeParams(BaseModel):
    name: str | None = Field(
        default=None,
        description="Letters, digits, . _ - (64 at most); generated if absent.",
    )


class EnterWorktreeTool(Tool[EnterWorktreeParams]):
    name = ENTER_WORKTREE_TOOL
    description = (
        "Only when the user asks to work in a worktree: make a git worktree "
        "(.claude/worktrees/NAME on a new branch worktree-NAME, from HEAD) and move this "
        "session into it from your next step; the main checkout stays untouched."
    )
    Params = EnterWorktreeParams
    default_permission = "ask"

    def describe(self, params: EnterWorktreeParams, ctx: ToolContext) -> tuple[str, str]:
        named = params.name or "(a generated name)"
        return (
            f"enter_worktree: {named}",
            f"Move this session into a new git worktree, .claude/worktrees/{named}, on a "
            f"new branch; the checkout in {ctx.directory} is left as it is.",
        )

    async def execute(self, params: EnterWorktreeParams, ctx: ToolContext) -> ToolResult:
        if ctx.worktrees is None:
            raise ToolError("Worktrees are not available here: work in this directory.")
        worktree = await ctx.worktrees.move(ctx.session_id, params.name)
        return ToolResult(
            title=worktree.branch,
            output=(
                f"Created the worktree {worktree.path} on the branch {worktree.branch}, from "
                f"{worktree.base[:12]}. This session now works there: relative paths and "
                "commands start in the worktree from your next step on."
            ),
            metadata={"worktree_path": worktree.path, "worktree_branch": worktree.branch},
        )
