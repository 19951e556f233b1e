"""Claude Code's InstructionsLoaded hook, observe-only as there (what a hook answers
changes nothing): each memory file (project/memory.py) as a session starts here
(`session_start`), and after a step what its calls brought in (step/memory_rules.py): a
path-scoped rule (`path_glob_match`, with its `globs`) and the memory of a folder below the
working directory (`nested_traversal`), both with `trigger_file_path`. What such a file
imports is `include`, with `parent_file_path`. A matcher matches `load_reason`."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agent_tui.engine_context import EngineContext
from agent_tui.project.memory import MemoryFile
from agent_tui.records import AssistantMessage, MessageWithParts, ToolPart
from agent_tui.step.memory_rules import Triggered, triggered
from agent_tui.step.system import memory_of

EVENT = "InstructionsLoaded"
NOT_SENT = ("permission_mode",)
"""Fields of every hook's payload Claude Code leaves out of this one."""


def fields(file: MemoryFile, reason: str, hit: Triggered | None = None) -> dict[str, Any]:
    """The event's own fields for one file, in Claude Code's order."""
    found: dict[str, Any] = {"file_path": str(file.path), "memory_type": file.memory_type}
    if file.imported_by is not None:
        return {**found, "load_reason": "include", "parent_file_path": str(file.imported_by)}
    found["load_reason"] = reason
    if hit is not None and hit.reason == "path_glob_match":
        found["globs"] = list(file.globs)
    if hit is not None:
        found["trigger_file_path"] = str(hit.file)
    return found


async def at_start(ctx: EngineContext, session_id: str, directory: Path) -> None:
    """The session's memory files as it starts here (its first prompt in this process)."""
    if not ctx.hooks.any_for(EVENT):
        return
    memory = memory_of(directory, ctx.config)
    loaded = [fields(file, "session_start") for file in memory.files]
    await _fire(ctx, session_id, directory, loaded, before_prompt=True)


async def after_step(
    ctx: EngineContext,
    directory: Path,
    history: list[MessageWithParts],
    assistant: AssistantMessage,
    parts: list[ToolPart],
) -> None:
    """What the step's calls (`parts`, of `assistant`, after `history`) brought in."""
    ids = {part.id for part in parts}
    if not ids or not ctx.hooks.any_for(EVENT):
        return
    step = MessageWithParts(info=assistant, parts=list(parts))
    memory = memory_of(directory, ctx.config)
    hits = [h for h in triggered([*history, step], memory, directory) if h.part_id in ids]
    loaded = [fields(file, hit.reason, hit) for hit in hits for file in hit.files]
    await _fire(ctx, assistant.session_id, directory, loaded, before_prompt=False)


async def _fire(
    ctx: EngineContext,
    session_id: str,
    directory: Path,
    loaded: list[dict[str, Any]],
    *,
    before_prompt: bool,
) -> None:
    """One event a file, at once; at a start without `prompt_id` (Claude Code loads
    them before the prompt is read)."""
    if not loaded:
        return
    common = await ctx.hook_payload(session_id, directory)
    for name in (*NOT_SENT, *(("prompt_id",) if before_prompt else ())):
        common.pop(name, None)
    await asyncio.gather(
        *(
            ctx.hooks.fire(EVENT, directory, {**common, **one}, subject=one["load_reason"])
            for one in loaded
        )
    )
