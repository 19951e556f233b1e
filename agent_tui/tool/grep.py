"""The grep tool: search file contents with a regex (ripgrep when installed)."""

from __future__ import annotations

import asyncio
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.files import BINARY_SNIFF_BYTES, SKIP_DIRS, looks_binary
from agent_tui.tool.tool_paths import absolute_path, display_path, resolve_path
from agent_tui.tool.walk import glob_matches, newest_first, walk_files

MAX_MATCHES = 100
MAX_MATCH_LINE_CHARS = 500
RG_LINE_LIMIT = 1024 * 1024
"""Longest ripgrep output line read (long lines are already cut by --max-columns)."""


class GrepParams(BaseModel):
    pattern: str = Field(description="Regular expression (Python syntax) to search for.")
    path: str | None = Field(
        default=None,
        description="File or folder to search (default: the working directory).",
    )
    include: str | None = Field(
        default=None,
        description='Only search files matching this glob, e.g. "*.py" or "*.{ts,tsx}".',
    )


@dataclass
class Matches:
    by_file: dict[Path, list[tuple[int, str]]] = field(default_factory=dict)
    total: int = 0

    def add(self, path: Path, number: int, text: str) -> None:
        self.total += 1
        lines = self.by_file.setdefault(path, [])
        if len(lines) < MAX_MATCHES:  # more can never be shown
            lines.append((number, text))


def _search_python(regex: re.Pattern[str], root: Path, include: str | None) -> Matches:
    # MULTILINE so that `^`/`$` in the whole-file check mean what they mean per line.
    whole = re.compile(regex.pattern, regex.flags | re.MULTILINE)
    matches = Matches()
    for path in [root] if root.is_file() else walk_files(root):
        rel = path.name if path == root else path.relative_to(root).as_posix()
        if include and not glob_matches(include, rel):
            continue
        try:
            data = path.read_bytes()
        except OSError:
            continue
        if looks_binary(data[:BINARY_SNIFF_BYTES]):
            continue
        text = data.decode("utf-8", errors="replace")
        if not whole.search(text):  # one pass over the whole file skips most files
            continue
        for number, line in enumerate(text.split("\n"), start=1):
            line = line.removesuffix("\r")
            if regex.search(line):
                matches.add(path, number, line)
    return matches


async def _search_rg(rg: str, pattern: str, root: Path, include: str | None) -> Matches | None:
    """Search with ripgrep; None when it cannot (e.g. it rejects the regex syntax).

    Unlike the Python fallback, ripgrep also skips files listed in .gitignore.
    """
    args = [
        rg,
        "--no-heading",
        "--line-number",
        "--with-filename",
        "--null",
        "--color=never",
        "--no-messages",
        "--hidden",
        f"--max-columns={MAX_MATCH_LINE_CHARS}",
        "--max-columns-preview",
    ]
    for skipped in sorted(SKIP_DIRS):
        args += ["--glob", f"!{skipped}/"]
    if include:
        args += ["--glob", include]
    args += ["--regexp", pattern, "--", str(root)]
    proc = await asyncio.create_subprocess_exec(
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=RG_LINE_LIMIT,
    )
    assert proc.stdout is not None
    matches = Matches()
    try:
        async for raw in proc.stdout:
            name, _, rest = raw.partition(b"\0")
            number, _, text = rest.partition(b":")
            if number.isdigit():
                line = text.decode("utf-8", errors="replace").rstrip("\r\n")
                path = Path(name.decode("utf-8", errors="surrogateescape"))
                matches.add(path, int(number), line)
        code = await proc.wait()
    except ValueError:  # a line over RG_LINE_LIMIT: let the Python search handle it
        return None
    finally:
        if proc.returncode is None:  # failed or cancelled: do not leave rg running
            proc.kill()
            await proc.wait()
    return None if code not in (0, 1) else matches


def _format(matches: Matches, ctx: ToolContext) -> str:
    if matches.total == 0:
        return "No matches found."
    lines: list[str] = []
    for path in newest_first(list(matches.by_file)):
        shown = display_path(ctx, path)
        for number, text in matches.by_file[path]:
            if len(lines) == MAX_MATCHES:
                break
            if len(text) > MAX_MATCH_LINE_CHARS:
                text = text[:MAX_MATCH_LINE_CHARS] + "..."
            lines.append(f"{shown}:{number}: {text}")
    if matches.total > len(lines):
        lines.append(
            f"\n(Showing {len(lines)} of {matches.total} matches, newest files first. "
            "Use a more specific pattern, path or include to narrow the search.)"
        )
    return "\n".join(lines)


class GrepTool(Tool[GrepParams]):
    name = "grep"
    description = (
        "Search file contents with a regular expression (Python syntax). Returns matching "
        "lines as path:line: text, files modified most recently first, at most 100 matches. "
        "Skips binary files and folders such as .git, node_modules and .venv. Use include "
        "to filter files by a glob."
    )
    Params = GrepParams
    default_permission = "allow"

    def describe(self, params: GrepParams, ctx: ToolContext) -> tuple[str, str]:
        where = display_path(ctx, absolute_path(ctx, params.path))
        return f"grep {params.pattern!r} in {where}", ""

    async def execute(self, params: GrepParams, ctx: ToolContext) -> ToolResult:
        try:
            regex = re.compile(params.pattern)
        except re.error as exc:
            raise ToolError(f"Invalid regular expression {params.pattern!r}: {exc}.") from exc
        root = await resolve_path(ctx, params.path)
        if not root.exists():
            raise ToolError(f"Path not found: {root}.")
        rg = shutil.which("rg")
        matches = await _search_rg(rg, params.pattern, root, params.include) if rg else None
        if matches is None:
            matches = await asyncio.to_thread(_search_python, regex, root, params.include)
        output = await asyncio.to_thread(_format, matches, ctx)
        return ToolResult(
            title=params.pattern,
            output=output,
            metadata={"matches": matches.total, "files": len(matches.by_file)},
        )
