"""After the agent changes a file (edit, write): its formatter (step/formatting.py), then
the diagnostics the change introduced (lsp/). Both add lines to the tool's result."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

from agent_tui.engine_context import EngineContext
from agent_tui.provider.stream_events import ToolCallReady, parse_arguments
from agent_tui.step.formatting import format_files, formatter_for
from agent_tui.tool.base import ToolResult
from agent_tui.tool.files import unified_diff

log = logging.getLogger(__name__)
FILE_CHANGING_TOOLS = {"edit", "write"}


@dataclass
class Watched:
    """A file a call is about to change that a formatter or a language server reads."""

    path: Path
    before: str | None
    """Its text before the call (None: it did not exist)."""
    checked: bool
    """A language server checks it."""


def read_text(path: Path) -> str | None:
    """A file's text; None when it does not exist or is not UTF-8 text."""
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeError):
        return None


async def watch(ctx: EngineContext, directory: Path, call: ToolCallReady) -> Watched | None:
    if call.name not in FILE_CHANGING_TOOLS:
        return None
    name = (parse_arguments(call.arguments) or {}).get("file_path")
    if not isinstance(name, str) or not name:
        return None
    path = Path(name) if Path(name).is_absolute() else directory / name
    checked = ctx.workspace.lsp.server_for(path) is not None
    if not checked and formatter_for(ctx, path) is None:
        return None
    return Watched(path, await asyncio.to_thread(read_text, path), checked)


async def notes_after(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    call: ToolCallReady,
    result: ToolResult,
    watched: Watched | None,
    read_only: bool,
) -> list[str]:
    """The lines the model reads after the change: formatted, diagnostics."""
    files = result.metadata.get("files") if call.name in FILE_CHANGING_TOOLS else None
    if not isinstance(files, list):
        return []
    # The change is made: nothing here may turn the call into a failure.
    written = await asyncio.to_thread(read_text, watched.path) if watched is not None else None
    try:
        notes = await format_files(ctx, session_id, directory, files, read_only)
    except Exception:
        log.exception("formatting %s failed", files)
        notes = ["[format] the formatter could not run (see agent-tui's log)."]
    if watched is None:
        return notes
    after = await asyncio.to_thread(read_text, watched.path)
    _diff_as_formatted(watched, written, after, directory, result)
    if watched.checked and after is not None:
        try:
            found = await ctx.workspace.lsp.check(
                directory, watched.path, watched.before, after, session_id=session_id
            )
        except Exception:
            log.exception("diagnostics of %s failed", watched.path)
        else:
            notes += [found] if found else []
    return notes


def _diff_as_formatted(
    watched: Watched, written: str | None, after: str | None, directory: Path, result: ToolResult
) -> None:
    """The call's diff as the file now is (`after`): what its formatter made of the change
    (every view shows this diff; the file on disk is the formatted one)."""
    if after is None or written is None or after == written or "diff" not in result.metadata:
        return
    try:
        name = str(watched.path.relative_to(directory))
    except ValueError:
        name = str(watched.path)
    result.metadata["diff"] = unified_diff(watched.before or "", after, name)
