"""task_output (Claude Code's TaskOutput, formerly BashOutput): what a background command
printed since the last read, optionally only the lines matching a regex, with whether it
still runs and its exit code. `block` waits for it to end (up to `timeout`)."""

from __future__ import annotations

import re

from pydantic import AliasChoices, BaseModel, Field, field_validator

from agent_tui.errors import ToolError
from agent_tui.tool.background import BackgroundCommands, Running
from agent_tui.tool.base import Tool, ToolContext, ToolResult

DEFAULT_WAIT_MS = 30_000
MAX_WAIT_MS = 600_000
TASK_OUTPUT_TOOL = "task_output"


class TaskOutputParams(BaseModel):
    task_id: str = Field(
        validation_alias=AliasChoices("task_id", "bash_id", "shell_id"),
        description="Its id, from bash's run_in_background.",
    )
    block: bool = Field(
        default=True,
        description="Wait for it to end (up to timeout) before reading.",
    )
    timeout: int = Field(
        default=DEFAULT_WAIT_MS,
        ge=0,
        le=MAX_WAIT_MS,
        description="The longest wait, in ms.",
    )
    filter: str | None = Field(
        default=None,
        description="A regex: only the new lines matching it are shown.",
    )

    @field_validator("filter")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression ({exc})") from exc
        return value or None


def session_commands(ctx: ToolContext) -> BackgroundCommands:
    if ctx.background is None:
        raise ToolError("There are no background commands here (none can be started).")
    return ctx.background


def report(found: Running, output: str) -> str:
    """The read in Claude Code's tags: status, exit code (once ended), output."""
    info = found.info
    lines = [f"<task_id>{info.id}</task_id>", f"<status>{info.status}</status>"]
    if info.exit_code is not None:
        lines.append(f"<exit_code>{info.exit_code}</exit_code>")
    lines.append(f"<output>\n{output.rstrip()}\n</output>" if output.strip() else "<output/>")
    return "\n".join(lines)


class TaskOutputTool(Tool[TaskOutputParams]):
    name = TASK_OUTPUT_TOOL
    description = (
        "Read what a background command printed since your last read, and its status "
        "(running, exited, failed, stopped; exit code). Use block=false for a server or "
        "watcher that keeps running."
    )
    Params = TaskOutputParams

    def describe(self, params: TaskOutputParams, ctx: ToolContext) -> tuple[str, str]:
        return f"Output of {params.task_id}", params.filter or ""

    async def execute(self, params: TaskOutputParams, ctx: ToolContext) -> ToolResult:
        found = session_commands(ctx).get(params.task_id)
        if params.block:
            await found.wait(params.timeout / 1000, ctx.abort)
        text, dropped = found.output.take_unread()
        if params.filter:
            pattern = re.compile(params.filter)
            text = "".join(line for line in text.splitlines(True) if pattern.search(line))
        if dropped:
            text = f"{found.output.describe_drop(dropped)}\n{text}"
        if not found.running:
            found.told = True  # the model has read its end: no notice follows
        metadata = {"background_id": found.id, "status": found.info.status}
        if found.info.exit_code is not None:
            metadata["exit_code"] = found.info.exit_code
        title = found.info.description or found.info.command
        return ToolResult(title=title, output=report(found, text), metadata=metadata)
