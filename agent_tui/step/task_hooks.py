"""TaskCreated and TaskCompleted (hooks/) as todowrite writes the list: an item it adds is
Claude Code's task created, one it marks completed a task completed. A hook refuses
either by exit 2 or `decision: "block"`: the item is not added, or keeps its status, and
the model reads why; `continue: false` is ignored here, as Claude Code ignores it from
its task tools."""

from __future__ import annotations

from pathlib import Path

from agent_tui.engine_context import EngineContext
from agent_tui.records import TodoItem
from agent_tui.tool.base import TodoEvent, TodoHooks


def todo_hooks(ctx: EngineContext, session_id: str, directory: Path) -> TodoHooks | None:
    """What todowrite asks of the session's hooks (None: no hook listens)."""
    if not (ctx.hooks.any_for("TaskCreated") or ctx.hooks.any_for("TaskCompleted")):
        return None

    async def ask(event: TodoEvent, item: TodoItem) -> str | None:
        if not ctx.hooks.any_for(event):
            return None
        payload = await ctx.hook_payload(session_id, directory)
        del payload["permission_mode"]  # Claude Code's task events have none
        # An item has one text, the subject; `task_description` is absent, as Claude
        # Code leaves it for a task created without one.
        payload.update(task_id=item.id, task_subject=item.content)
        result = await ctx.hooks.fire(event, directory, payload)
        return result.reason if result.blocked else None

    return ask
