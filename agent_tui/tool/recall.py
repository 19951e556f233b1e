"""The recall tool: search this session's own stored history, compacted or pruned alike.

A summary keeps the gist; recall brings back the exact text it left out (a path, a
command, an error) from SQLite, where every original is kept.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.ids import local_time
from agent_tui.records import (
    MessageWithParts,
    Part,
    ReasoningPart,
    TextPart,
    ToolPart,
    ToolStateCompleted,
    ToolStateError,
)
from agent_tui.storage.search import SearchHit
from agent_tui.tool.base import Tool, ToolContext, ToolResult

MAX_LIMIT = 50


class RecallParams(BaseModel):
    query: str = Field(
        description=(
            'Words to find (all must match; if none match, any may), or a "quoted phrase". '
            "Searches everything said and every tool input and output of this session, "
            "including what was summarised away or cleared."
        )
    )
    id: str | None = Field(
        default=None,
        description="A message or part id from an earlier result: returns that original in full.",
    )
    limit: int = Field(default=8, ge=1, le=MAX_LIMIT, description="Most results to return.")


def _hit_line(hit: SearchHit) -> str:
    what = f"tool {hit.tool}" if hit.tool else f"{hit.role} {hit.kind}"
    flags = [f for f, on in (("compacted away", hit.compacted), ("pruned", hit.pruned)) if on]
    head = " · ".join([f"[{hit.part_id}] {what}", local_time(hit.created), *flags])
    return f"{head}\n  {hit.excerpt}"


def _part_text(part: Part) -> str | None:
    if isinstance(part, TextPart) and part.text:
        return part.text
    if isinstance(part, ReasoningPart) and part.text:
        return f"(reasoning)\n{part.text}"
    if isinstance(part, ToolPart):
        state = part.state
        body = (
            state.output
            if isinstance(state, ToolStateCompleted)
            else state.error
            if isinstance(state, ToolStateError)
            else "(no result)"
        )
        return f"Tool {part.tool} [{part.id}] input: {json.dumps(state.input)}\nOutput:\n{body}"
    return None


def render_original(message: MessageWithParts) -> str:
    info = message.info
    texts = [t for p in message.parts if (t := _part_text(p))]
    return f"[{info.id}] {info.role} · {local_time(info.created)}\n\n" + "\n\n".join(texts)


class RecallTool(Tool[RecallParams]):
    name = "recall"
    description = (
        "Search this session's full history, including what compaction summarised away and "
        "tool outputs that were cleared: exact paths, commands, error texts, numbers, what "
        "the person said. Returns short excerpts with ids; pass an id to get that original "
        "in full."
    )
    Params = RecallParams
    default_permission = "allow"  # it only reads this session's own history

    def describe(self, params: RecallParams, ctx: ToolContext) -> tuple[str, str]:
        return f"recall {params.id or params.query}", ""

    async def execute(self, params: RecallParams, ctx: ToolContext) -> ToolResult:
        if ctx.history is None:
            raise ToolError("recall is not available here: this session has no stored history.")
        if params.id:
            found = await ctx.history.find_original(ctx.session_id, params.id.strip())
            if found is None:
                raise ToolError(
                    f"No message or part {params.id!r} in this session. Use an id from a "
                    "recall result ([prt_…] or [msg_…])."
                )
            return ToolResult(title=f"recall {params.id}", output=render_original(found))
        hits = await ctx.history.search_parts(ctx.session_id, params.query, params.limit)
        if not hits:
            return ToolResult(
                title=f"recall {params.query}",
                output=f"Nothing in this session matches {params.query!r}.",
            )
        lines = [f"{len(hits)} match{'es' if len(hits) != 1 else ''} for {params.query!r}:"]
        lines += [_hit_line(hit) for hit in hits]
        lines.append("Pass id=<the id in brackets> to read one in full.")
        return ToolResult(title=f"recall {params.query}", output="\n\n".join(lines))
