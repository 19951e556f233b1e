"""An MCP server's tool as one of ours: `SERVER_TOOL`, the server's JSON schema as its
parameters, permission `ask` by default; the registry redacts and truncates its output."""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import re
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from agent_tui.config.settings import PermissionLevel
from agent_tui.errors import ToolError
from agent_tui.records import ImageAttachment
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.images import EXTENSIONS, image_from_bytes, store_image, too_large, too_wide

if TYPE_CHECKING:
    import mcp_types

    from agent_tui.mcp.mcp_server import McpServer

TOOL_NAME_MAX = 64
"""Providers reject longer function names (OpenAI: ^[a-zA-Z0-9_-]{1,64}$)."""
DETAIL_MAX = 2000
"""Characters of the arguments shown in the permission dialog."""
IMAGE_TYPES = frozenset(EXTENSIONS) | {"image/jpg"}
"""Image blocks sent on to the model (the rest are summarised as not shown)."""


class McpArguments(BaseModel):
    """Any JSON object: the server validates its own arguments against its schema."""

    model_config = ConfigDict(extra="allow")


def tool_name(server: str, tool: str) -> str:
    """`server_tool`, with characters providers reject replaced by `_`."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{server}_{tool}")[:TOOL_NAME_MAX]


class McpTool(Tool):
    Params = McpArguments
    default_permission: ClassVar[PermissionLevel] = "ask"

    def __init__(self, server: McpServer, tool: mcp_types.Tool) -> None:
        self.server = server
        self.tool = tool
        self.name = tool_name(server.name, tool.name)  # type: ignore[misc]
        self.description = (  # type: ignore[misc]
            tool.description or tool.title or f"The {tool.name} tool of the {server.name} server."
        )

    def parameters(self) -> dict[str, Any]:
        return tool_schema(self.tool)

    def describe(self, params: BaseModel, ctx: ToolContext) -> tuple[str, str]:
        detail = json.dumps(params.model_dump(), ensure_ascii=False)
        if len(detail) > DETAIL_MAX:
            detail = detail[:DETAIL_MAX] + "…"
        return f"{self.server.name}: {self.tool.name}", detail

    async def execute(self, params: BaseModel, ctx: ToolContext) -> ToolResult:
        where = f"The {self.tool.name} tool of the MCP server {self.server.name}"
        try:
            result = await self.server.call(self.tool.name, params.model_dump(), ctx.abort)
        except InterruptedError as exc:
            raise ToolError(f"{where}: {exc}.") from exc
        except RuntimeError as exc:
            raise ToolError(f"{where} failed: {exc}") from exc
        output = render_result(result)
        if result.is_error:
            raise ToolError(f"{where} returned an error: {output}")
        title = f"{self.server.name}: {self.tool.name}"
        images, notes = await asyncio.to_thread(_store_images, result, title, ctx)
        return ToolResult(
            title=title,
            output="\n".join([output, *notes]),
            metadata={"mcp_server": self.server.name},
            attachments=images,
        )


def _store_images(
    result: mcp_types.CallToolResult, title: str, ctx: ToolContext
) -> tuple[list[ImageAttachment], list[str]]:
    """The result's PNG, JPEG, GIF and WebP images, stored for the model (the read tool's
    limits apply); a line for each one that cannot be sent."""
    images: list[ImageAttachment] = []
    notes: list[str] = []
    for n, block in enumerate(result.content, start=1):
        if getattr(block, "type", "") != "image" or block.mime_type not in IMAGE_TYPES:
            continue
        name = f"{title} image {n}"
        try:
            image = image_from_bytes(base64.b64decode(block.data, validate=True), block.mime_type)
        except (binascii.Error, ValueError):
            image = None
        if image is None:
            notes.append(f"[{name} is not a valid {block.mime_type} image: not shown]")
            continue
        data = image.data
        refusal = too_large(name, len(data), ctx.images) or too_wide(name, image, ctx.images)
        if refusal:
            notes.append(refusal)
            continue
        images.append(store_image(image, ctx.output_dir, name))
    return images, notes


def tool_schema(tool: mcp_types.Tool) -> dict[str, Any]:
    """The tool's input schema as a function's parameters (an object, always)."""
    schema = dict(tool.input_schema or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def render_result(result: mcp_types.CallToolResult) -> str:
    """Text content as is; images, audio and resources as a one-line summary."""
    pieces = [_render_block(block) for block in result.content]
    if not pieces and result.structured_content is not None:
        pieces.append(json.dumps(result.structured_content, ensure_ascii=False, indent=2))
    return "\n".join(pieces) if pieces else "(no output)"


def _render_block(block: Any) -> str:
    kind = getattr(block, "type", "")
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        size = len(block.data) * 3 // 4  # base64
        # An image of IMAGE_TYPES is sent on (or a note says why not).
        shown = "" if kind == "image" and block.mime_type in IMAGE_TYPES else ", not shown"
        return f"[{kind}: {block.mime_type}, about {size:,} bytes{shown}]"
    if kind == "resource_link":
        return f"[resource link: {block.uri}]"
    if kind == "resource":
        resource = block.resource
        if (text := getattr(resource, "text", None)) is not None:
            return f"[resource {resource.uri}]\n{text}"
        return f"[resource {resource.uri} ({resource.mime_type or 'binary'}), not shown]"
    return f"[{kind or type(block).__name__} content, not shown]"
