"""Prune: clear old tool outputs (marked `time.compacted`, never deleted)."""

from __future__ import annotations

import os

from agent_tui.config import CompactionConfig
from agent_tui.events import PartUpdated
from agent_tui.ids import now_ms
from agent_tui.session.context import EngineContext
from agent_tui.session.tokens import count_tokens
from agent_tui.storage.models import (
    AssistantMessage,
    MessageWithParts,
    ToolPart,
    ToolStateCompleted,
    UserMessage,
)

PROTECTED_TURNS = 2
FILE_READERS = {"read"}
FILE_WRITERS = {"edit", "write"}


def _file_of(part: ToolPart) -> str | None:
    value = part.state.input.get("file_path") or part.state.input.get("filePath")
    if not isinstance(value, str):
        return None
    return os.path.normpath(value)


def select_prunable(
    history: list[MessageWithParts], config: CompactionConfig, model: str
) -> tuple[list[ToolPart], int]:
    """(parts to mark, their estimated tokens); empty when below `prune_minimum`.

    Walk back from the newest message, skipping the last 2 user turns, stopping at a
    summary or an already-pruned output. Outputs superseded by a later read or edit of
    the same file go first; other outputs beyond `prune_protect` tokens follow.
    """
    turns = 0
    protected_total = 0
    marked: list[ToolPart] = []
    marked_total = 0
    touched_later: set[str] = set()  # files read or changed after the point we walk to
    for message in reversed(history):
        if isinstance(message.info, UserMessage):
            turns += 1
        if isinstance(message.info, AssistantMessage) and message.info.summary:
            break
        tools = [p for p in reversed(message.parts) if isinstance(p, ToolPart)]
        if turns < PROTECTED_TURNS:
            touched_later.update(
                f for p in tools if (f := _file_of(p)) and p.tool in FILE_READERS | FILE_WRITERS
            )
            continue
        for part in tools:
            state = part.state
            path = _file_of(part)
            if not isinstance(state, ToolStateCompleted) or part.tool in config.protected_tools:
                if path and part.tool in FILE_WRITERS:
                    touched_later.add(path)
                continue
            if state.time.compacted:
                return _decide(marked, marked_total, config)
            tokens = count_tokens(state.output, model)
            superseded = part.tool in FILE_READERS and path is not None and path in touched_later
            if superseded:
                marked.append(part)
                marked_total += tokens
            else:
                protected_total += tokens
                if protected_total > config.prune_protect:
                    marked.append(part)
                    marked_total += tokens
            if path and part.tool in FILE_READERS | FILE_WRITERS:
                touched_later.add(path)
    return _decide(marked, marked_total, config)


def _decide(
    marked: list[ToolPart], total: int, config: CompactionConfig
) -> tuple[list[ToolPart], int]:
    if total > config.prune_minimum:
        return marked, total
    return [], 0


async def prune(ctx: EngineContext, history: list[MessageWithParts], model: str) -> int:
    """Mark prunable outputs; return the estimated tokens freed (0 if nothing applied)."""
    if not ctx.config.compaction.prune:
        return 0
    parts, total = select_prunable(history, ctx.config.compaction, model)
    if not parts:
        return 0
    stamp = now_ms()
    for part in parts:
        assert isinstance(part.state, ToolStateCompleted)
        part.state.time.compacted = stamp
        await ctx.db.upsert_part(part)
        ctx.publish(PartUpdated(part=part))
    await ctx.db.flush()
    return total
