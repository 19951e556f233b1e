"""The write tool: create or overwrite a whole file, atomically."""

from __future__ import annotations

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.files import (
    change_metadata,
    read_current,
    read_existing,
    unified_diff,
    write_text,
)
from agent_tui.tool.tool_paths import absolute_path, display_path, is_inside, writable_path
from agent_tui.tool.truncation import count_lines

PREVIEW_LINES = 100
"""Lines of a new file's content shown when asking for permission."""


class WriteParams(BaseModel):
    file_path: str = Field(
        description="Path of the file to write, absolute or relative to the working directory."
    )
    content: str = Field(description="The complete new content of the file.")


def content_preview(content: str) -> str:
    lines = content.splitlines()
    if len(lines) <= PREVIEW_LINES:
        return content
    rest = len(lines) - PREVIEW_LINES
    return "\n".join(lines[:PREVIEW_LINES]) + f"\n... ({rest} more lines)"


class WriteTool(Tool[WriteParams]):
    name = "write"
    description = (
        "Write a file, replacing it entirely if it exists (parent folders are created). "
        "Prefer the edit tool for changing part of an existing file. Read an existing file "
        "before overwriting it."
    )
    Params = WriteParams
    default_permission = "ask"

    def describe(self, params: WriteParams, ctx: ToolContext) -> tuple[str, str]:
        path = absolute_path(ctx, params.file_path)
        name = display_path(ctx, path)
        title = f"write {name}"
        # Outside paths are checked (and maybe asked about) later; do not peek at them here.
        if not is_inside(ctx, path) or not path.is_file():
            return title, content_preview(params.content)
        try:
            diff = unified_diff(read_existing(path) or "", params.content, name)
        except OSError:
            return title, content_preview(params.content)
        return title, diff or "(no changes)"

    async def execute(self, params: WriteParams, ctx: ToolContext) -> ToolResult:
        path = await writable_path(ctx, params.file_path)
        name = display_path(ctx, path)
        if path.is_dir():
            raise ToolError(f"{path} is a folder; give the path of a file to write.")
        old = await read_current(path, ctx.editor)
        diff = unified_diff(old or "", params.content, name)
        size = await write_text(path, params.content, ctx.editor)
        verb = "Created" if old is None else "Wrote"
        output = f"{verb} {name} ({size} bytes, {count_lines(params.content)} lines)."
        metadata = {**change_metadata(path, diff), "created": old is None}
        return ToolResult(title=name, output=output, metadata=metadata)
