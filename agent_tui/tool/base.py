"""What a tool is: pydantic parameters, a permission default, and an async execute."""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from agent_tui.config.settings import (
    ImagesConfig,
    PermissionLevel,
    PermissionRule,
    TruncationConfig,
)
from agent_tui.project.agents import MODE_SWITCH
from agent_tui.records import ImageAttachment, TodoItem, Tokens, Worktree
from agent_tui.redact import Redactor

if TYPE_CHECKING:
    from agent_tui.records import MessageWithParts
    from agent_tui.sandbox import Sandbox, SessionNetwork
    from agent_tui.storage.search import SearchHit
    from agent_tui.tool.background import BackgroundCommands

PermissionReply = Literal["once", "always", "deny", "never"]
"""never: deny, and deny this tool without asking for the rest of the session."""


class HistorySearch(Protocol):
    """What the recall tool reads: the session store's search (storage/search.py)."""

    async def search_parts(
        self, session_id: str, query: str, limit: int = 8
    ) -> list[SearchHit]: ...

    async def find_original(self, session_id: str, item_id: str) -> MessageWithParts | None: ...


class TodoStore(Protocol):
    """What the todo tools read and write: the session's list (todos.py)."""

    async def get_todos(self, session_id: str) -> list[TodoItem]: ...

    async def set_todos(self, session_id: str, items: list[TodoItem]) -> None: ...


TodoEvent = Literal["TaskCreated", "TaskCompleted"]
TodoHooks = Callable[[TodoEvent, TodoItem], Awaitable[str | None]]
"""The hooks of a todo item added (`TaskCreated`) or marked completed (`TaskCompleted`):
why a hook refuses it, or None (step/task_hooks.py)."""


class SubagentAnswer(BaseModel):
    """What a subagent's child session ended with."""

    session_id: str
    text: str
    cost: float = 0.0
    """The child session's cost (its own children's included)."""
    model: str = ""
    """The model its last step ran on."""
    tokens: Tokens | None = None
    """Its last step's tokens (the context it ended with); None: it made no step."""
    tool_uses: int = 0
    """The tool calls it made."""


class Subagents(Protocol):
    """What the task tool calls: runs a child session with the same loop (session/subagent.py)."""

    async def run_task(
        self,
        ctx: ToolContext,
        description: str,
        prompt: str,
        agent: str | None,
        isolation: str | None = None,
    ) -> SubagentAnswer:
        """`isolation` "worktree": the child works in a new git worktree of its own."""


class Worktrees(Protocol):
    """Moves a session into a new git worktree, for the enter_worktree tool (implemented
    by session/worktree_sessions.py)."""

    async def move(self, session_id: str, name: str | None = None) -> Worktree: ...


class EditorFiles(Protocol):
    """Files read and written through the person's editor (an ACP client's `fs`): its
    unsaved buffers are what the tools read, and edits land in its buffers."""

    can_read: bool
    can_write: bool

    async def read_text(self, path: Path) -> str: ...

    async def write_text(self, path: Path, content: str) -> None: ...


class PermissionRequest(BaseModel):
    """Asked of the person when a tool's permission is `ask`."""

    session_id: str
    tool: str
    """The permission key: a tool name, `external_directory` or `unsandboxed`."""
    title: str
    detail: str = ""
    input: dict[str, Any] = Field(default_factory=dict)
    call_id: str = ""
    """The model's id of the tool call asking (empty for calls the person started)."""
    question: str = ""
    """The dialog's question when not "Allow TOOL?" (running a command outside the sandbox)."""
    always: str = ""
    """What "always" would allow for the session when it is a rule (`bash git status*`);
    empty: the whole tool."""
    always_rules: list[str] = Field(default_factory=list)
    """The patterns "always" adds to the tool's rules for the session (`git status`,
    `git status *`, `domain:example.com`); empty: the whole tool."""
    always_label: str = ""
    """The "always" choice in the person's words when it is not "for this session" (a
    project's program let out of the sandbox: for this project, saved in their config)."""


AskPermission = Callable[[PermissionRequest], Awaitable[PermissionReply]]
P = TypeVar("P", bound=BaseModel)


class ToolResult(BaseModel):
    title: str
    output: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    attachments: list[ImageAttachment] = Field(default_factory=list)
    """Images for the model (stored under the data dir, tool/images.py)."""


@dataclass
class ToolContext:
    session_id: str
    message_id: str
    call_id: str
    directory: Path
    """The session's working directory; relative paths resolve against it."""
    output_dir: Path
    """Where truncated outputs are saved in full (data dir / tool-output)."""
    truncation: TruncationConfig = field(default_factory=TruncationConfig)
    images: ImagesConfig = field(default_factory=ImagesConfig)
    """Limits of the images a tool returns (the read tool)."""
    abort: asyncio.Event = field(default_factory=asyncio.Event)
    ask: AskPermission | None = None
    """Ask the person (e.g. for a path outside the working directory)."""
    permissions: dict[str, PermissionRule] = field(default_factory=dict)
    redact: Redactor | None = None
    """Replaces secrets in outputs before they are saved or sent (see redact.py)."""
    env: dict[str, str] | None = None
    """The environment of processes the tools start, secrets withheld (computed once
    by the engine, see secrets.py); None: agent-tui's own minus the default exclusions."""
    history: HistorySearch | None = None
    """The session's stored history, for the recall tool."""
    subagents: Subagents | None = None
    """Runs child sessions, for the task tool (None: subagents are unavailable)."""
    worktrees: Worktrees | None = None
    """Moves the session into a new worktree, for enter_worktree (None: unavailable)."""
    todos: TodoStore | None = None
    """The session's todo list, for todowrite and todoread."""
    todo_hooks: TodoHooks | None = None
    """Asked as todowrite adds an item or completes one (TaskCreated, TaskCompleted
    hooks): None when no hook listens."""
    editor: EditorFiles | None = None
    """Read, edit and write go through the editor when it offers to (None: the disk)."""
    progress: Callable[[str], None] | None = None
    """Output as it arrives (redacted), for views that show a running command live."""
    sandbox: Sandbox | None = None
    """Where commands run (bash, `!command`); None: unsandboxed (a bare context)."""
    read_only: bool = False
    """Commands run in a read-only sandbox, the project included (plan mode)."""
    mode_switch: str = MODE_SWITCH
    """How the person switches agents in the front-end (plan mode's refusal names it)."""
    background: BackgroundCommands | None = None
    """The session's background commands (bash `run_in_background`, task_output,
    task_stop); None: none can be started here."""
    network: SessionNetwork | None = None
    """The network the session's sandboxed commands share (bash, `!command`) while
    sandbox.network is off; None: each command's is its own."""
    env_file: Path | None = None
    """`CLAUDE_ENV_FILE` (a SessionStart hook's `export` lines): run before each bash
    command, in its shell (None: none)."""


def untitled(schema: Any) -> Any:
    """A JSON schema less its `title` keywords (a property named `title` stays)."""
    if isinstance(schema, list):
        return [untitled(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            kept[key] = {name: untitled(sub) for name, sub in value.items()}
        else:
            kept[key] = untitled(value)
    return kept


class Tool(ABC, Generic[P]):
    """A tool whose calls arrive as `P`, its `Params` (the registry validates them)."""

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[BaseModel]]
    default_permission: ClassVar[PermissionLevel] = "allow"

    def parameters(self) -> dict[str, Any]:
        """The JSON schema of its arguments, without the titles pydantic makes up from
        the field names (`"title": "Task Id"`): the model reads the names themselves, and
        every request carried them, ~1,000 characters for the built-in tools."""
        return untitled(self.Params.model_json_schema())

    def definition(self) -> dict[str, Any]:
        """The OpenAI-style function definition sent to the model."""
        schema = self.parameters()
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }

    def describe(self, params: P, ctx: ToolContext) -> tuple[str, str]:
        """(title, detail) shown in the permission dialog and on the tool line."""
        return self.name, ""

    @abstractmethod
    async def execute(self, params: P, ctx: ToolContext) -> ToolResult:
        """Run the tool. Raise ToolError for failures the model should see."""
