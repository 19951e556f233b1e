"""The read tool: a window of a text file with line numbers, or an image for the model."""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.files import binary_reason, not_found_message
from agent_tui.tool.images import image_mime, load_image, store_image, too_large, too_wide
from agent_tui.tool.tool_paths import absolute_path, display_path, resolve_path

DEFAULT_READ_LIMIT = 2000
MAX_LINE_CHARS = 2000


class ReadParams(BaseModel):
    file_path: str = Field(
        description="Path of the file to read, absolute or relative to the working directory."
    )
    offset: int = Field(default=1, ge=1, description="Line number to start from (1-based).")
    limit: int = Field(
        default=DEFAULT_READ_LIMIT, ge=1, description="Maximum number of lines to read."
    )


@dataclass
class _Window:
    lines: list[str] = field(default_factory=list)
    total_seen: int = 0
    more: bool = False
    byte_capped: bool = False
    replaced: bool = False
    """Some bytes were not valid UTF-8 and were replaced by U+FFFD."""


def _read_window(
    path: Path, offset: int, limit: int, max_bytes: int, text: str | None = None
) -> _Window:
    """Stream the file so that reading a window of a huge log costs only that window."""
    window = _Window()
    used = 0
    # The file, or the editor's text of it when it gave one.
    given = None if text is None else io.BytesIO(text.encode("utf-8", errors="surrogateescape"))
    with path.open("rb") if given is None else given as handle:
        for number, raw in enumerate(handle, start=1):
            window.total_seen = number
            if number < offset:
                continue
            if len(window.lines) >= limit:
                window.more = True
                break
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                text = raw.decode("utf-8", errors="replace")
                window.replaced = True
            text = text.rstrip("\r\n")
            if len(text) > MAX_LINE_CHARS:
                cut = len(text) - MAX_LINE_CHARS
                text = f"{text[:MAX_LINE_CHARS]}... [line truncated: {cut} more characters]"
            line = f"{number:>6}\t{text}"
            used += len(line.encode("utf-8")) + 1
            if used > max_bytes and window.lines:
                window.more = window.byte_capped = True
                break
            window.lines.append(line)
    return window


class ReadTool(Tool[ReadParams]):
    name = "read"
    description = (
        "Read a text file. Returns lines prefixed with their line number (cat -n style). "
        "By default reads up to 2000 lines from the start; use offset and limit to read "
        "other parts of long files. Lines over 2000 characters are cut. PNG, JPEG, GIF and "
        "WebP images are returned as images (look at screenshots, diagrams, rendered "
        "output). Other binary files are refused; to see a folder's contents use the list "
        "tool."
    )
    Params = ReadParams
    default_permission = "allow"

    def describe(self, params: ReadParams, ctx: ToolContext) -> tuple[str, str]:
        return display_path(ctx, absolute_path(ctx, params.file_path)), ""

    async def execute(self, params: ReadParams, ctx: ToolContext) -> ToolResult:
        path = await resolve_path(ctx, params.file_path)
        shown = display_path(ctx, path)
        if path.is_dir():
            raise ToolError(
                f"{path} is a folder, not a file. Use the list tool to see its contents."
            )
        if not path.exists():
            raise ToolError(not_found_message(path))
        if (mime := await asyncio.to_thread(image_mime, path)) is not None:
            return await self._image(path, shown, mime, ctx)
        if reason := await asyncio.to_thread(binary_reason, path):
            raise ToolError(
                f"Cannot read {shown}: it is a binary file ({reason}). "
                "The read tool only shows text files."
            )
        # Stay within the truncation limits so the output never needs truncating (and saving).
        limit = min(params.limit, ctx.truncation.max_lines)
        editor = ctx.editor
        text = await editor.read_text(path) if editor is not None and editor.can_read else None
        window = await asyncio.to_thread(
            _read_window, path, params.offset, limit, ctx.truncation.max_bytes, text
        )
        metadata: dict[str, Any] = {"path": str(path), "offset": params.offset, "truncated": False}
        if window.total_seen == 0:
            return ToolResult(title=shown, output="(The file is empty.)", metadata=metadata)
        if not window.lines:
            raise ToolError(
                f"Offset {params.offset} is beyond the end of {shown}, "
                f"which has {window.total_seen} lines."
            )
        last = params.offset + len(window.lines) - 1
        parts = ["\n".join(window.lines)]
        if window.more:
            capped = window.byte_capped or limit < params.limit
            why = "Output capped by size. " if capped else ""
            parts.append(
                f"({why}File has more lines. Use 'offset' parameter to read beyond line {last})"
            )
        else:
            parts.append(f"(End of file - {window.total_seen} lines total)")
        if window.replaced:
            parts.append(
                "(Note: the file is not valid UTF-8; undecodable bytes are shown as \ufffd.)"
            )
            metadata["encoding_errors"] = True
        metadata.update(lines=len(window.lines), last_line=last, more=window.more)
        return ToolResult(title=shown, output="\n\n".join(parts), metadata=metadata)

    async def _image(self, path: Path, shown: str, mime: str, ctx: ToolContext) -> ToolResult:
        """The image itself for the model (stored under the data dir), with a line naming
        it; refused above the size limits, which a provider would reject."""
        if refusal := too_large(shown, path.stat().st_size, ctx.images):
            raise ToolError(refusal)
        image = await asyncio.to_thread(load_image, path, mime)
        if refusal := too_wide(shown, image, ctx.images):
            raise ToolError(refusal)
        attachment = await asyncio.to_thread(store_image, image, ctx.output_dir, shown)
        return ToolResult(
            title=shown,
            output=f"Image {shown} ({image.describe()}).",
            metadata={"path": str(path), "truncated": False},
            attachments=[attachment],
        )
