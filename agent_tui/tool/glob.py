"""The glob tool: find files by name pattern, most recently modified first."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.tool_paths import absolute_path, display_path, resolve_path
from agent_tui.tool.walk import glob_matches, newest_first, split_glob_base, walk_files

MAX_RESULTS = 100


class GlobParams(BaseModel):
    pattern: str = Field(
        description=(
            'Glob pattern, e.g. "**/*.py" or "src/**/test_*.{ts,tsx}". A pattern without "/" '
            'matches file names at any depth ("*.md").'
        )
    )
    path: str | None = Field(
        default=None, description="Folder to search in (default: the working directory)."
    )


def find_files(root: Path, pattern: str) -> list[Path]:
    return [p for p in walk_files(root) if glob_matches(pattern, p.relative_to(root).as_posix())]


class GlobTool(Tool[GlobParams]):
    name = "glob"
    description = (
        'Find files whose path matches a glob pattern ("**/*.py", "src/*.ts", "*.{json,yaml}"). '
        "Returns paths relative to the searched folder, most recently modified first, at most "
        "100. Skips .git, node_modules, __pycache__ and .venv."
    )
    Params = GlobParams
    default_permission = "allow"

    def describe(self, params: GlobParams, ctx: ToolContext) -> tuple[str, str]:
        where = display_path(ctx, absolute_path(ctx, params.path))
        return f"glob {params.pattern} in {where}", ""

    async def execute(self, params: GlobParams, ctx: ToolContext) -> ToolResult:
        pattern, where = params.pattern, params.path
        if pattern.startswith("/"):  # an absolute pattern names its own folder
            base, pattern = split_glob_base(pattern)
            where = str(Path(where or ctx.directory) / base)
        root = await resolve_path(ctx, where)
        if not root.is_dir():
            raise ToolError(f"{root} is not a folder. Give a folder to search in as path.")
        found = await asyncio.to_thread(lambda: newest_first(find_files(root, pattern)))
        lines = [p.relative_to(root).as_posix() for p in found[:MAX_RESULTS]]
        if not lines:
            output = f"No files found matching {params.pattern!r}."
        else:
            output = "\n".join(lines)
            if len(found) > MAX_RESULTS:
                output += (
                    f"\n\n(Showing {MAX_RESULTS} of {len(found)} files, newest first. "
                    "Use a more specific pattern or path.)"
                )
        return ToolResult(
            title=params.pattern,
            output=output,
            metadata={"count": len(found), "truncated_results": len(found) > MAX_RESULTS},
        )
