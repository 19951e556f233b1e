"""The edit tool: replace an exact string in a file, atomically, keeping its line endings."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.files import (
    change_metadata,
    not_found_message,
    read_current,
    read_existing,
    unified_diff,
    write_text,
)
from agent_tui.tool.tool_paths import absolute_path, display_path, is_inside, writable_path


class EditParams(BaseModel):
    file_path: str = Field(
        description="Path of the file to edit, absolute or relative to the working directory."
    )
    old_string: str = Field(
        description=(
            "The exact text to replace, including whitespace and indentation, copied from "
            "the file (without read's line-number prefixes). Empty to create a new file."
        )
    )
    new_string: str = Field(description="The text to put in its place.")
    replace_all: bool = Field(
        default=False, description="Replace every occurrence instead of requiring exactly one."
    )


@dataclass
class EditPlan:
    path: Path
    old: str | None
    """Current content; None when the file does not exist yet."""
    new: str
    replacements: int
    diff: str


def _uses_crlf(text: str) -> bool:
    crlf = text.count("\r\n")
    return crlf > 0 and crlf >= text.count("\n") - crlf


def _to_crlf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", "\r\n")


def _not_found(content: str, old_string: str, name: str) -> ToolError:
    message = (
        f"old_string not found in {name}. Read the file first and copy the exact text "
        "including whitespace."
    )
    stripped = old_string.strip()
    if stripped and stripped != old_string and stripped in content:
        line = content[: content.index(stripped)].count("\n") + 1
        message += (
            f" (The text without its leading/trailing whitespace appears at line {line}; "
            "check the indentation and line breaks.)"
        )
    return ToolError(message)


def plan_edit(path: Path, params: EditParams, name: str, old: str | None = None) -> EditPlan:
    """Work out the new content and diff, or raise ToolError saying why the edit can't apply.
    `old`: the file's current text when already read (e.g. from the editor)."""
    if params.old_string == params.new_string:
        raise ToolError("old_string and new_string are identical; there is nothing to change.")
    if path.is_dir():
        raise ToolError(f"{path} is a folder, not a file.")
    if old is None:
        old = read_existing(path)
    if params.old_string == "":
        if old:
            raise ToolError(
                f"{name} already exists and is not empty. To change it, give the exact text "
                "to replace as old_string; to replace it entirely, use the write tool."
            )
        return EditPlan(path, old, params.new_string, 1, unified_diff("", params.new_string, name))
    if old is None:
        raise ToolError(not_found_message(path))
    target, replacement = params.old_string, params.new_string
    if _uses_crlf(old) and target not in old:
        # Tools show lines without their \r; match and write in the file's own line endings.
        target, replacement = _to_crlf(target), _to_crlf(replacement)
    count = old.count(target)
    if count == 0:
        raise _not_found(old, params.old_string, name)
    if count > 1 and not params.replace_all:
        raise ToolError(
            f"old_string matches {count} times in {name}. Give more surrounding context to "
            "make it unique, or set replace_all to true to replace every occurrence."
        )
    new = old.replace(target, replacement)
    return EditPlan(path, old, new, count, unified_diff(old, new, name))


class EditTool(Tool[EditParams]):
    name = "edit"
    description = (
        "Replace an exact string in a file. old_string must match the file exactly "
        "(whitespace and indentation included) and be unique unless replace_all is true; "
        "read the file first. With an empty old_string, creates a new file holding "
        "new_string. The file's line endings are kept."
    )
    Params = EditParams
    default_permission = "ask"

    def describe(self, params: EditParams, ctx: ToolContext) -> tuple[str, str]:
        path = absolute_path(ctx, params.file_path)
        name = display_path(ctx, path)
        title = f"edit {name}"
        if not is_inside(ctx, path):
            # Outside paths are checked (and maybe asked about) later; do not peek at them here.
            return title, f"- {params.old_string}\n+ {params.new_string}"
        # A ToolError here (e.g. old_string not found) fails the call before anyone is asked.
        try:
            return title, plan_edit(path, params, name).diff
        except OSError as exc:
            return title, f"(preview unavailable: {exc})"

    async def execute(self, params: EditParams, ctx: ToolContext) -> ToolResult:
        path = await writable_path(ctx, params.file_path)
        name = display_path(ctx, path)
        if path.is_dir():
            raise ToolError(f"{path} is a folder, not a file.")
        current = await read_current(path, ctx.editor)
        plan = await asyncio.to_thread(plan_edit, path, params, name, current)
        size = await write_text(path, plan.new, ctx.editor)
        metadata = {**change_metadata(path, plan.diff), "replacements": plan.replacements}
        if plan.old is None or plan.old == "":
            output = f"Created {name} ({size} bytes)."
        else:
            times = "1 occurrence" if plan.replacements == 1 else f"{plan.replacements} occurrences"
            changed = f"+{metadata['additions']} -{metadata['deletions']} lines"
            output = f"Edited {name}: replaced {times} ({changed})."
        return ToolResult(title=name, output=output, metadata=metadata)
