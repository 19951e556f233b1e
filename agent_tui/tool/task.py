"""The task tool: hand a self-contained piece of work to a subagent.

A subagent is a child session (`Session.parent_id`) run by the same loop with its own
context window and a restricted tool set; the tool awaits it and returns its final
answer. The running is done by the session layer through `ToolContext.subagents`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult

TASK_TOOL = "task"


class TaskParams(BaseModel):
    description: str = Field(description="A short (3-5 words) description of the task.")
    prompt: str = Field(
        description=(
            "The complete task for the subagent: it sees nothing of this conversation, so "
            "say what to find or do, where to look, and what the answer should contain."
        )
    )
    agent: str | None = Field(
        default=None,
        description="A subagent listed in this tool's description; default: the read-only one.",
    )
    isolation: Literal["worktree"] | None = Field(
        default=None,
        description='"worktree": it works in a new git worktree of its own (kept when it '
        "changed something: its path and branch are in the answer).",
    )


def task_result(session_id: str, text: str) -> str:
    return f"<task_result session={session_id}>\n{text}\n</task_result>"


class TaskTool(Tool[TaskParams]):
    name = TASK_TOOL
    description = (
        "Run a subagent: a fresh session with its own context window that can read, search "
        "and list files (not change them) and answers with one final message, which is "
        "returned here. Use it for searches and investigations whose intermediate output "
        "you do not need to keep in this conversation. Several task calls in one reply "
        "run at the same time. The subagent cannot see this conversation: put everything "
        "it needs in the prompt."
    )
    Params = TaskParams

    def __init__(self, subagents: list[tuple[str, str]] | None = None) -> None:
        self.subagents = subagents or []
        """(name, description) of the agents `agent` may name (project/agents.py, mode subagent
        or all), listed in the description the model reads."""

    def definition(self) -> dict[str, Any]:
        definition = super().definition()
        if self.subagents:
            listed = "\n".join(
                f"- {name}: {text or '(no description)'}" for name, text in self.subagents
            )
            definition["function"]["description"] += (
                "\n\nSubagents you can name in `agent` (leave it out for the default "
                f"read-only one):\n{listed}"
            )
        return definition

    def describe(self, params: TaskParams, ctx: ToolContext) -> tuple[str, str]:
        return f"task: {params.description}", params.prompt

    async def execute(self, params: TaskParams, ctx: ToolContext) -> ToolResult:
        if ctx.subagents is None:
            raise ToolError("Subagents are not available here: do the work yourself.")
        answer = await ctx.subagents.run_task(
            ctx, params.description, params.prompt, params.agent, params.isolation
        )
        return ToolResult(
            title=params.description,
            output=task_result(answer.session_id, answer.text),
            metadata=answer.model_dump(exclude={"text"}),
        )
