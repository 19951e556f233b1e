"""task_stop (Claude Code's TaskStop, formerly KillShell): stop a background command and
everything it started (its process group: SIGTERM, then SIGKILL after a grace)."""

from __future__ import annotations

from pydantic import AliasChoices, BaseModel, Field

from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.task_output import session_commands

TASK_STOP_TOOL = "task_stop"


class TaskStopParams(BaseModel):
    task_id: str = Field(
        validation_alias=AliasChoices("task_id", "shell_id", "bash_id"),
        description="The id bash gave the background command to stop.",
    )


class TaskStopTool(Tool[TaskStopParams]):
    name = TASK_STOP_TOOL
    description = (
        "Stop a background command (bash with run_in_background) by its id, with "
        "everything it started."
    )
    Params = TaskStopParams

    def describe(self, params: TaskStopParams, ctx: ToolContext) -> tuple[str, str]:
        return f"Stop {params.task_id}", ""

    async def execute(self, params: TaskStopParams, ctx: ToolContext) -> ToolResult:
        stopped = await session_commands(ctx).stop(params.task_id, tell_model=False)
        info = stopped.info
        return ToolResult(
            title=info.description or info.command,
            output=f"Stopped background command {info.id}: {info.command}",
            metadata={"background_id": info.id, "status": info.status},
        )
