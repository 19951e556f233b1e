"""The `hooks` config key, in Claude Code's shape: event name -> list of
`{matcher, hooks: [{type: "command", command, timeout}]}`. A Claude Code settings file's
`hooks` block, copied as is, is valid here: events agent-tui does not fire are kept and
listed as such in `agent-tui context`, and an event name it does not know (from a newer
Claude Code) is a warning, never an invalid config."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

FIRED = (
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Notification",
    "UserPromptSubmit",
    "UserPromptExpansion",
    "MessageDisplay",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "TaskCreated",
    "TaskCompleted",
    "SessionStart",
    "SessionEnd",
    "PreCompact",
    "PostCompact",
    "InstructionsLoaded",
)
"""The events agent-tui fires."""
NOT_FIRED = (
    "Setup",
    "PermissionDenied",
    "TeammateIdle",
    "ConfigChange",
    "CwdChanged",
    "DirectoryAdded",
    "FileChanged",
    "WorktreeCreate",
    "WorktreeRemove",
    "Elicitation",
    "ElicitationResult",
)
"""Claude Code events a copied settings file may name: accepted, never fired here, each
for want of what fires it in Claude Code (docs/wiring.md says which): `Setup` fires only
for `claude --init-only`, `-p --init` and `-p --maintenance`; `PermissionDenied` only for
auto mode's classifier; `CwdChanged` when the shell's directory changes between calls
(agent-tui's bash starts each command in the session's folder); `ConfigChange`,
`FileChanged` and `DirectoryAdded` need a watcher of settings and files and `/add-dir`;
the rest belong to worktrees, agent teams and MCP elicitation."""
TOOL_EVENTS = frozenset({"PreToolUse", "PermissionRequest", "PostToolUse", "PostToolUseFailure"})
"""Events whose matcher matches a tool name (agent-tui's or Claude Code's); the others'
match their subject (a source, a trigger, an agent or notification type) as it is."""
CLAUDE_TOOL_NAMES = {
    "bash": "Bash",
    "read": "Read",
    "edit": "Edit",
    "write": "Write",
    "grep": "Grep",
    "glob": "Glob",
    "list": "LS",
    "webfetch": "WebFetch",
    "todowrite": "TodoWrite",
    "todoread": "TodoRead",
    "task": "Agent",
    "task_output": "TaskOutput",
    "task_stop": "TaskStop",
    "enter_worktree": "EnterWorktree",
}
"""agent-tui's tools by the names Claude Code gives their counterparts: a matcher may use
either, so existing scripts work. Tools Claude Code lacks (recall, skill, plan_exit, …)
keep agent-tui's name."""
FORMER_NAMES = {"task": ("Task",), "task_output": ("BashOutput",), "task_stop": ("KillShell",)}
"""Names Claude Code gave a tool before (its subagent tool was `Task` until 2.1, reading and
stopping a background command `BashOutput` and `KillShell`): a matcher written for them
still matches."""
CLAUDE_FIELDS = {"task": {"agent": "subagent_type"}, "grep": {"include": "glob"}}
"""The inputs Claude Code's counterpart names otherwise (the rest are named alike): a hook
reads them, and answers `updatedInput`, by Claude Code's names."""
ENTRYPOINTS = {"the agent-tui app": "cli", "agent-tui acp": "sdk-ts", "agent-tui serve": "sdk-ts"}
"""`CLAUDE_CODE_ENTRYPOINT` by front-end, as Claude Code sets it: "cli" in its terminal
app, "sdk-ts" under an editor's client (its ACP adapter runs the TypeScript SDK), else
"sdk-cli" (`claude -p`, as `agent-tui run` and the other commands)."""
STOP_FAILURE_ERRORS = {
    "rate_limit": "rate_limit",
    "server": "server_error",
    "auth": "authentication_failed",
    "permission": "authentication_failed",
    "billing": "billing_error",
    "not_found": "model_not_found",
}
"""StopFailure's `error`, Claude Code's category, by the kind of provider error that ended
the turn (provider/provider_errors.py); any other is "unknown", as Claude Code names a
400 it was sent (recorded: tests/fixtures/claude_code_hooks/StopFailure.json)."""
COMMAND_SOURCES = {"project": "projectSettings", "user": "userSettings"}
"""UserPromptExpansion's `command_source` by where a custom command's file is (a project's
`.claude/commands` or `.agent-tui/commands`, or the person's own), as Claude Code names
its settings levels."""
DEFAULT_TIMEOUT = 60.0
"""Seconds a hook command may run (Claude Code's default)."""


class HookCommand(BaseModel):
    model_config = ConfigDict(extra="allow")  # fields newer Claude Code versions add

    type: str = "command"
    """"command" runs `command`; "prompt" asks the small model `prompt` (Claude Code)."""
    command: str = ""
    """A shell command; the event arrives as JSON on its stdin."""
    prompt: str = ""
    """For "prompt": what the model is asked; `$ARGUMENTS` is the event as JSON."""
    model: str | None = None
    """For "prompt": the model to ask (default: `small_model`, else the session's)."""
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0)
    """Seconds before it is stopped (a one-line warning; the session goes on)."""


class HookMatcher(BaseModel):
    model_config = ConfigDict(extra="forbid")

    matcher: str = ""
    """A regular expression matched against the whole tool name (PreToolUse,
    PermissionRequest, PostToolUse, PostToolUseFailure), the trigger (PreCompact,
    PostCompact: manual / auto), the source (SessionStart: startup / resume / clear /
    compact), the agent type (SubagentStart, SubagentStop), the notification type
    (Notification), the command's name (UserPromptExpansion) or the error (StopFailure);
    "" or "*" match everything. PostToolBatch, MessageDisplay, TaskCreated and
    TaskCompleted have no subject: every matcher matches, as in Claude Code."""
    hooks: list[HookCommand] = Field(default_factory=list)

    @field_validator("matcher")
    @classmethod
    def _valid_pattern(cls, value: str) -> str:
        if value not in ("", "*"):
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a regular expression ({exc})") from exc
        return value

    def matches(self, subject: str | None, *, tool: bool = True) -> bool:
        """Whether it matches `subject`: a tool by agent-tui's name, Claude Code's or a
        former one of Claude Code's (`tool`), anything else as it is."""
        if self.matcher in ("", "*") or subject is None:
            return True
        names = (
            (subject, claude_name(subject), *FORMER_NAMES.get(subject, ())) if tool else (subject,)
        )
        return any(re.fullmatch(self.matcher, name) for name in names)


HooksConfig = dict[str, list[HookMatcher]]


@dataclass(frozen=True)
class HookSource:
    """The hooks one config file defines."""

    path: str
    hooks: HooksConfig
    project: bool = False
    """From the project's own config file: runs only once the project is trusted."""


def claude_name(tool: str) -> str:
    """A tool by the name Claude Code gives its counterpart (`Bash`), else its own."""
    return CLAUDE_TOOL_NAMES.get(tool, tool)


def entrypoint(front_end: str) -> str:
    return ENTRYPOINTS.get(front_end, "sdk-cli")


def claude_input(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A call's input by Claude Code's field names (`subagent_type`, not `agent`)."""
    names = CLAUDE_FIELDS.get(tool, {})
    return {names.get(key, key): value for key, value in arguments.items()}


def our_input(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A hook's `updatedInput` by agent-tui's field names (either naming is taken)."""
    names = {claude: ours for ours, claude in CLAUDE_FIELDS.get(tool, {}).items()}
    return {names.get(key, key): value for key, value in arguments.items()}


def unknown_events(hooks: HooksConfig) -> list[str]:
    """Event names neither agent-tui nor the Claude Code it knows has (ignored)."""
    return sorted(set(hooks) - set(FIRED) - set(NOT_FIRED))
