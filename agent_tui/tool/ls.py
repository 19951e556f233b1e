"""The list tool: a tree of a folder's files and subfolders, breadth first."""

from __future__ import annotations

import asyncio
import os
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.tool.base import Tool, ToolContext, ToolResult
from agent_tui.tool.files import SKIP_DIRS
from agent_tui.tool.tool_paths import absolute_path, display_path, resolve_path
from agent_tui.tool.walk import glob_matches

MAX_ENTRIES = 100
COUNT_LIMIT = 10_000
"""Entries counted beyond MAX_ENTRIES before the walk gives up counting."""
# fmt: off
LIST_SKIP_DIRS = SKIP_DIRS | frozenset({
    "dist", "build", "target", ".idea", ".cache", "coverage", ".next", ".nuxt", ".gradle",
    ".terraform", ".eggs", "htmlcov",
})
# fmt: on


class ListParams(BaseModel):
    path: str | None = Field(
        default=None, description="Folder to list (default: the working directory)."
    )
    ignore: list[str] = Field(
        default_factory=list,
        description='Glob patterns of files or folders to leave out, e.g. ["*.log", "tmp"].',
    )


@dataclass
class Listing:
    children: dict[str, list[tuple[str, bool]]] = field(default_factory=dict)
    """Folder (relative, "" for the root) -> shown (name, is_folder) entries."""
    hidden: dict[str, int] = field(default_factory=dict)
    """Folder -> entries not shown because the listing was full."""
    shown: int = 0
    total: int = 0
    complete: bool = True


def _scan(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda e: e.name)
    except OSError:
        return []


def build_listing(root: Path, ignore: list[str]) -> Listing:
    """Breadth first, so a big first subfolder cannot crowd out the rest of the tree."""
    listing = Listing()
    queue: deque[str] = deque([""])
    while queue:
        rel_dir = queue.popleft()
        for entry in _scan(root / rel_dir):
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            is_dir = entry.is_dir(follow_symlinks=False)
            if (is_dir and entry.name in LIST_SKIP_DIRS) or any(
                glob_matches(p, rel) for p in ignore
            ):
                continue
            listing.total += 1
            if listing.shown < MAX_ENTRIES:
                listing.children.setdefault(rel_dir, []).append((entry.name, is_dir))
                listing.shown += 1
            else:
                listing.hidden[rel_dir] = listing.hidden.get(rel_dir, 0) + 1
            if is_dir:
                queue.append(rel)
            if listing.total >= COUNT_LIMIT:
                listing.complete = False
                return listing
    return listing


def render(listing: Listing, root_label: str) -> str:
    lines = [root_label.rstrip("/") + "/"]

    def walk(rel_dir: str, depth: int) -> None:
        entries = sorted(listing.children.get(rel_dir, []), key=lambda e: (not e[1], e[0]))
        for name, is_dir in entries:
            lines.append("  " * depth + (f"{name}/" if is_dir else name))
            if is_dir:
                walk(f"{rel_dir}/{name}" if rel_dir else name, depth + 1)
        if listing.hidden.get(rel_dir):
            lines.append("  " * depth + f"... ({listing.hidden[rel_dir]} more)")

    walk("", 1)
    return "\n".join(lines)


class ListTool(Tool[ListParams]):
    name = "list"
    description = (
        "List a folder as a tree of files and subfolders (subfolders end with /), breadth "
        "first, at most 100 entries. Skips .git, node_modules, __pycache__, .venv, dist, "
        "build and similar. Use ignore to leave out more; use glob to find files by pattern."
    )
    Params = ListParams
    default_permission = "allow"

    def describe(self, params: ListParams, ctx: ToolContext) -> tuple[str, str]:
        return display_path(ctx, absolute_path(ctx, params.path)), ""

    async def execute(self, params: ListParams, ctx: ToolContext) -> ToolResult:
        root = await resolve_path(ctx, params.path)
        if not root.exists():
            raise ToolError(f"Folder not found: {root}.")
        if not root.is_dir():
            raise ToolError(f"{root} is a file, not a folder. Use the read tool to read it.")
        listing = await asyncio.to_thread(build_listing, root, params.ignore)
        output = render(listing, str(root))
        if listing.shown == 0:
            output += "\n  (empty)"
        elif listing.shown < listing.total:
            total = f"{listing.total}" if listing.complete else f"more than {listing.total}"
            output += (
                f"\n\n(Showing {listing.shown} of {total} entries. List a subfolder, or use "
                "ignore or the glob tool, to see more.)"
            )
        return ToolResult(
            title=display_path(ctx, root),
            output=output,
            metadata={"count": listing.shown, "total": listing.total},
        )
