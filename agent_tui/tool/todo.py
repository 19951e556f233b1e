"""The todowrite and todoread tools: the session's todo list, kept in the session store.

The list outlives compaction: the summary request shows it to the summariser and the
summary restates it afterwards (context/compaction.py), and the app's sidebar shows it.
An item added, or marked completed, is what Claude Code's TaskCreated / TaskCompleted
hooks hear of (`ToolContext.todo_hooks`); one they refuse is not written so.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.records import TodoItem, TodoPriority, TodoStatus
from agent_tui.tool.base import TodoHooks, TodoStore, Tool, ToolContext, ToolResult

STATUS_MARK = {"pending": "[ ]", "in_progress": "[~]", "completed": "[x]", "cancelled": "[-]"}
EMPTY_TEXT = "(the todo list is empty)"


def render_todos(items: list[TodoItem]) -> str:
    """`[x] Write the tests (high, id 1)` per item; the model and the summary read this."""
    if not items:
        return EMPTY_TEXT
    return "\n".join(
        f"{STATUS_MARK[item.status]} {item.content} ({item.priority}, id {item.id})"
        for item in items
    )


class TodoEntry(BaseModel):
    content: str = Field(description="What to do, in a short imperative sentence.")
    status: TodoStatus = Field(
        default="pending",
        description="pending, in_progress (one at a time), completed or cancelled.",
    )
    priority: TodoPriority = Field(default="medium", description="high, medium or low.")
    id: str | None = Field(
        default=None, description="A stable id for the item (default: its position, 1-based)."
    )


class TodoWriteParams(BaseModel):
    todos: list[TodoEntry] = Field(
        description="The whole updated list: it replaces the previous one (send [] to clear)."
    )


class TodoReadParams(BaseModel):
    pass


def _store(ctx: ToolContext) -> TodoStore:
    if ctx.todos is None:
        raise ToolError("The todo list is not available in this session.")
    return ctx.todos


def _result(items: list[TodoItem]) -> ToolResult:
    """What both tools answer: the list as it now is."""
    done = sum(1 for item in items if item.status == "completed")
    return ToolResult(
        title=f"Todos {done}/{len(items)} done",
        output=render_todos(items),
        metadata={"todos": [item.model_dump(mode="json") for item in items]},
    )


class TodoWriteTool(Tool[TodoWriteParams]):
    name = "todowrite"
    description = (
        "Write the session's todo list (it replaces the whole list). Use it for work of "
        "three or more steps: plan the steps, mark one in_progress before starting it and "
        "completed as soon as it is done, add what you discover. The person sees the list; "
        "it survives compaction."
    )
    Params = TodoWriteParams
    default_permission = "allow"

    def describe(self, params: TodoWriteParams, ctx: ToolContext) -> tuple[str, str]:
        return f"{len(params.todos)} todos", ""

    async def execute(self, params: TodoWriteParams, ctx: ToolContext) -> ToolResult:
        items = [
            TodoItem(
                id=entry.id or str(index),
                content=entry.content.strip(),
                status=entry.status,
                priority=entry.priority,
            )
            for index, entry in enumerate(params.todos, start=1)
        ]
        ids = [item.id for item in items]
        if repeated := sorted({i for i in ids if ids.count(i) > 1}):
            raise ToolError(f"Todo ids must be unique; repeated: {', '.join(repeated)}.")
        if any(not item.content for item in items):
            raise ToolError("Every todo needs a non-empty content.")
        store = _store(ctx)
        refused: list[str] = []
        if ctx.todo_hooks is not None:
            before = {item.id: item for item in await store.get_todos(ctx.session_id)}
            items = await _admitted(items, before, ctx.todo_hooks, refused)
        await store.set_todos(ctx.session_id, items)
        result = _result(items)
        if refused:
            result.output = "\n\n".join([result.output, *refused])
        return result


async def _admitted(
    items: list[TodoItem], before: dict[str, TodoItem], hooks: TodoHooks, refused: list[str]
) -> list[TodoItem]:
    """The list as the hooks let it be written: an item a TaskCreated hook refuses is not
    added, one a TaskCompleted hook refuses keeps its status; each refusal says why in
    `refused`, for the model."""
    kept: list[TodoItem] = []
    for item in items:
        old = before.get(item.id)
        if old is None and (why := await hooks("TaskCreated", item)) is not None:
            refused.append(f"[TaskCreated hook] Not added: {item.content} ({why})")
            continue
        was_done = old is not None and old.status == "completed"
        if item.status == "completed" and not was_done:
            if (why := await hooks("TaskCompleted", item)) is not None:
                status = old.status if old is not None else "pending"
                item = item.model_copy(update={"status": status})
                refused.append(f"[TaskCompleted hook] Not completed: {item.content} ({why})")
        kept.append(item)
    return kept


class TodoReadTool(Tool[TodoReadParams]):
    name = "todoread"
    description = "Read the session's todo list as todowrite last wrote it."
    Params = TodoReadParams
    default_permission = "allow"

    async def execute(self, params: TodoReadParams, ctx: ToolContext) -> ToolResult:
        return _result(await _store(ctx).get_todos(ctx.session_id))
