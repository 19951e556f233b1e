"""The tools the model can call, and the one way to run a call: parse, check, ask, execute."""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from agent_tui.config.settings import PermissionLevel
from agent_tui.errors import PermissionDenied, ToolError
from agent_tui.project.agents import (
    PLAN_EXIT_TOOL,
    SUBAGENT_TOOLS,
    AgentInfo,
    wildcard_key,
    wildcard_value,
)
from agent_tui.tool.base import PermissionRequest, Tool, ToolContext, ToolResult
from agent_tui.tool.bash import BashTool
from agent_tui.tool.bash_policy import STRICTNESS, command_level, rule_level
from agent_tui.tool.edit import EditTool
from agent_tui.tool.enter_worktree import EnterWorktreeTool
from agent_tui.tool.files import os_error_message
from agent_tui.tool.glob import GlobTool
from agent_tui.tool.grep import GrepTool
from agent_tui.tool.ls import ListTool
from agent_tui.tool.permission_rules import always_rules, level_for
from agent_tui.tool.plan_exit import PlanExitTool
from agent_tui.tool.read import ReadTool
from agent_tui.tool.recall import RecallTool
from agent_tui.tool.skill import SkillTool
from agent_tui.tool.task import TASK_TOOL, TaskTool
from agent_tui.tool.task_output import TASK_OUTPUT_TOOL, TaskOutputTool
from agent_tui.tool.task_stop import TaskStopTool
from agent_tui.tool.todo import TodoReadTool, TodoWriteTool
from agent_tui.tool.truncation import truncate_output_async
from agent_tui.tool.webfetch import WebFetchTool
from agent_tui.tool.write import WriteTool

log = logging.getLogger(__name__)

TAIL_TRUNCATED_TOOLS = frozenset({"bash", TASK_OUTPUT_TOOL})
"""Tools whose outputs keep their end when truncated (where errors and summaries are)."""
PermissionMode = Literal["ask", "auto-edits"]
PERMISSION_MODES: tuple[PermissionMode, ...] = ("ask", "auto-edits")
"""The quick permission mode of a session (in memory only): `auto-edits` runs edit and
write without asking where they would ask; bash and everything else still ask."""
EDIT_TOOLS = frozenset({"edit", "write"})
DEFAULT_TOOLS: tuple[type[Tool], ...] = (
    ReadTool,
    WriteTool,
    EditTool,
    BashTool,
    GrepTool,
    GlobTool,
    ListTool,
    RecallTool,
    TodoWriteTool,
    TodoReadTool,
    SkillTool,
    WebFetchTool,
    TaskTool,
    TaskOutputTool,
    TaskStopTool,
    EnterWorktreeTool,
)
"""Every engine's tools (MCP servers' join them)."""
AGENT_ONLY_TOOLS: dict[str, type[Tool]] = {PLAN_EXIT_TOOL: PlanExitTool}
"""Tools only agents that name them in `tools` get (not in the default registry, so
the build agent's tool list is the registry's own, byte for byte)."""
_CHANGES = itertools.count()
"""Stamps of registries' tool sets, unique in the process (what a joined view is kept by)."""


def compact_schema(params: type[BaseModel]) -> str:
    """`file_path: string (required), offset: integer = 1` for error messages."""
    schema = params.model_json_schema()
    required = set(schema.get("required", []))
    fields = []
    for name, prop in schema.get("properties", {}).items():
        kinds = [p.get("type", "any") for p in prop.get("anyOf", [prop])]
        kind = " | ".join(k for k in kinds if k != "null") or "any"
        if "null" in kinds:
            kind += " | null"
        if name in required:
            fields.append(f"{name}: {kind} (required)")
        else:
            fields.append(f"{name}: {kind} = {json.dumps(prop.get('default'))}")
    return "{" + ", ".join(fields) + "}"


def _validation_message(tool: Tool, exc: ValidationError) -> str:
    problems = [
        f"{'.'.join(map(str, err['loc'])) or '(arguments)'}: {err['msg']}" for err in exc.errors()
    ]
    return (
        f"Invalid arguments for tool {tool.name}: {'; '.join(problems)}. "
        f"Expected parameters: {compact_schema(tool.Params)}"
    )


def parse_arguments(tool: Tool, raw: str | dict[str, Any]) -> BaseModel:
    """The model's raw arguments (JSON text or a dict) as the tool's Params, or ToolError."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw if raw.strip() else "{}")
        except json.JSONDecodeError as exc:
            quoted = raw if len(raw) <= 200 else raw[:200] + "..."
            raise ToolError(
                f"Arguments for tool {tool.name} are not valid JSON ({exc.msg} at line "
                f"{exc.lineno}, column {exc.colno}): {quoted}"
            ) from exc
    if not isinstance(raw, dict):
        raise ToolError(
            f"Arguments for tool {tool.name} must be a JSON object, got {type(raw).__name__}. "
            f"Expected parameters: {compact_schema(tool.Params)}"
        )
    try:
        return tool.Params.model_validate(raw)
    except ValidationError as exc:
        raise ToolError(_validation_message(tool, exc)) from exc


def call_level(tool: Tool, params: BaseModel, ctx: ToolContext) -> tuple[PermissionLevel, str]:
    """(level, what it was decided on) of a call: the tool's key in the permissions, else
    the longest matching wildcard key (`"github_*": "ask"`, fnmatch), else the tool's
    default; a key holding rules decides by the call's command, path or domain."""
    rule = wildcard_value(ctx.permissions, tool.name)
    if rule is None or isinstance(rule, str):
        return rule or tool.default_permission, f"the {tool.name} tool"
    return level_for(rule, tool.name, params, ctx.directory, tool.default_permission)


async def check_permission(
    tool: Tool, params: BaseModel, ctx: ToolContext, *, auto_accept: bool = False
) -> None:
    """Raise PermissionDenied unless config or the person allows this call;
    `auto_accept` (the session's auto-accept-edits mode) answers an `ask` with yes."""
    level, _ = call_level(tool, params, ctx)
    if level == "allow" or (level == "ask" and auto_accept):
        return
    if (refusal := config_refusal(tool, params, ctx)) is not None:
        raise PermissionDenied(refusal)
    try:
        title, detail = tool.describe(params, ctx)
    except ToolError:
        raise  # the call cannot succeed (e.g. edit's old_string is missing): nobody is asked
    except Exception:
        log.exception("describe() of tool %s failed", tool.name)
        title, detail = tool.name, json.dumps(params.model_dump())
    if ctx.ask is None:
        raise nobody_to_ask(tool.name)
    patterns = always_rules(tool.name, params)
    reply = await ctx.ask(
        PermissionRequest(
            session_id=ctx.session_id,
            tool=tool.name,
            title=title,
            detail=detail,
            input=params.model_dump(),
            call_id=ctx.call_id,
            always=" · ".join(f"{tool.name} {p}" for p in patterns if not p.endswith(" *")),
            always_rules=patterns,
        )
    )
    if reply in ("always", "never"):
        remember(ctx.permissions, tool, patterns, "allow" if reply == "always" else "deny")
    if reply in ("deny", "never"):
        raise PermissionDenied("The person denied permission to run this tool call.")


def config_refusal(tool: Tool, params: BaseModel, ctx: ToolContext) -> str | None:
    """Why config denies this call (None: it does not)."""
    level, what = call_level(tool, params, ctx)
    if level != "deny":
        return None
    key = wildcard_key(ctx.permissions, tool.name) or tool.name
    rule = ctx.permissions.get(key)
    where = f'permission.{key} = "deny"'
    where = where if isinstance(rule, str) else f'a "deny" rule in permission.{key}'
    return f"{what[0].upper() + what[1:]} is denied by config ({where})."


def nobody_to_ask(tool: str) -> PermissionDenied:
    """A call that needs the person's approval where nobody can give it (headless)."""
    return PermissionDenied(
        f"The {tool} tool needs the person's approval, and nobody is here to approve "
        "it. Do not retry; tell the person what you wanted to run. (To allow it, set "
        f'"permission": {{"{tool}": "allow"}} in agent-tui.json, or run with '
        f"--allow {tool}.)"
    )


def remember(
    permissions: dict[str, Any], tool: Tool, patterns: list[str], level: PermissionLevel
) -> None:
    """An "always" or "never" answer, for the rest of the session: rules for the call's
    commands or domain where it has them, else the whole tool."""
    if not patterns:
        permissions[tool.name] = level
        return
    rule = wildcard_value(permissions, tool.name) or tool.default_permission
    rules = dict(rule) if isinstance(rule, dict) else {"*": rule}
    permissions[tool.name] = {**rules, **dict.fromkeys(patterns, level)}


def _subject(params: BaseModel) -> str:
    for key in ("file_path", "path", "url", "pattern"):
        value = getattr(params, key, None)
        if isinstance(value, str):
            return value
    return ""


@dataclass(eq=False)
class AgentPolicy:
    """An agent's permissions over config's and the person's: its `deny` refuses (with
    its own message, e.g. plan mode's), its `allow` runs without asking unless config
    denies, anything else is asked as usual. A subagent also keeps the refusals of the
    agent that started it (`also`), so plan mode holds inside its task calls."""

    agent: AgentInfo
    modes: Mapping[str, PermissionMode]
    also: tuple[AgentInfo, ...] = ()

    @property
    def read_only(self) -> bool:
        """Commands run in a read-only sandbox: the agent, or the one that started this
        subagent, may not change files (plan mode)."""
        return any(agent.read_only for agent in (self.agent, *self.also))

    def _level(
        self, agent: AgentInfo, tool: Tool, params: BaseModel, base: PermissionLevel
    ) -> tuple[PermissionLevel | None, str]:
        rule = wildcard_value(agent.permission, tool.name)
        if rule is None or isinstance(rule, str):
            return rule, f"the {tool.name} tool"
        command = getattr(params, "command", None)
        if tool.name == "bash" and isinstance(command, str):
            level, reason = command_level(rule, command, base)
            return level, f"this bash command ({reason})"
        subject = _subject(params)
        level = rule_level(rule, subject) or rule.get("*")
        return level, f"the {tool.name} tool on {subject or 'this input'}"

    def refusal(self, tool: Tool, params: BaseModel, ctx: ToolContext) -> str | None:
        """Why the agent, or the one that started it, refuses this call (None: neither)."""
        base, _ = call_level(tool, params, ctx)
        for agent in (self.agent, *self.also):
            level, what = self._level(agent, tool, params, base)
            if level == "deny":
                return agent.refusal_for(what, ctx.mode_switch)
        return None

    async def check(self, tool: Tool, params: BaseModel, ctx: ToolContext) -> None:
        base, _ = call_level(tool, params, ctx)
        verdict: PermissionLevel | None = None
        for agent in (self.agent, *self.also):
            level, what = self._level(agent, tool, params, base)
            if level == "deny":
                raise PermissionDenied(agent.refusal_for(what, ctx.mode_switch))
            if agent is self.agent and level is not None:
                verdict = level
            elif level is not None and verdict is not None:
                verdict = max(verdict, level, key=STRICTNESS.__getitem__)
        if verdict == "allow" and base != "deny":
            return
        auto = tool.name in EDIT_TOOLS and self.modes.get(ctx.session_id) == "auto-edits"
        await check_permission(tool, params, ctx, auto_accept=auto)


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = (), policy: AgentPolicy | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._views: dict[tuple[object, ...], ToolRegistry] = {}
        self._stamp = next(_CHANGES)
        self.policy = policy
        """The agent whose permissions apply to every call (None: config's alone)."""
        for tool in tools:
            self.register(tool)

    @classmethod
    def default(cls) -> ToolRegistry:
        return cls(tool() for tool in DEFAULT_TOOLS)

    def register(self, tool: Tool) -> None:
        self._tools[tool.name] = tool
        self._definitions: list[dict[str, Any]] | None = None
        self._views = {}  # an MCP server's tools arrive late: agents see them from now on
        self._stamp = next(_CHANGES)

    def joined(self, other: ToolRegistry) -> ToolRegistry:
        """These tools and `other`'s whose names are free here (a session's own MCP
        servers beside its project's tools), under this registry's policy. Kept while
        neither changes, so its definitions are built once (a stable prompt prefix)."""
        key = ("joined", other._stamp)
        if (found := self._views.get(key)) is None:
            free = [tool for name, tool in other._tools.items() if name not in self._tools]
            found = self._views[key] = ToolRegistry([*self._tools.values(), *free], self.policy)
        return found

    def for_agent(
        self,
        agent: AgentInfo,
        modes: Mapping[str, PermissionMode],
        *,
        subagent: bool = False,
        also: tuple[AgentInfo, ...] = (),
    ) -> ToolRegistry:
        """The agent's registry: the tools its `tools` enables (a subagent's default is
        the read-only ones, and never `task`) under its permissions. Kept while the tool
        set is unchanged, so its definitions are built once (a stable prompt prefix)."""
        key = (id(agent), id(modes), subagent, *(id(a) for a in also))
        cached = self._views.get(key)
        if cached is not None and cached.policy is not None and cached.policy.agent is agent:
            return cached
        tools = [
            self._tools[n]
            for n in self.names()
            if not (subagent and n == TASK_TOOL)
            and agent.tool_enabled(n, not subagent or n in SUBAGENT_TOOLS)
        ]
        tools += [cls() for n, cls in AGENT_ONLY_TOOLS.items() if agent.tool_enabled(n, False)]
        view = self._views[key] = ToolRegistry(tools, AgentPolicy(agent, modes, also))
        return view

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def definitions(self) -> list[dict[str, Any]]:
        """OpenAI-style function definitions, sorted by name (a stable prompt prefix).
        Built once: JSON schema generation costs milliseconds and runs every step."""
        if getattr(self, "_definitions", None) is None:
            self._definitions = [self._tools[name].definition() for name in self.names()]
        return self._definitions

    async def run(
        self, name: str, raw_arguments: str | dict[str, Any], ctx: ToolContext
    ) -> ToolResult:
        """Run one tool call. Every failure the model should see is a ToolError."""
        tool, params = await self.admit(name, raw_arguments, ctx)
        return await self.execute(tool, params, ctx)

    def refusal(
        self, name: str, raw_arguments: str | dict[str, Any], ctx: ToolContext
    ) -> str | None:
        """Why config or the agent denies this call before anyone is asked (None: it
        may run, or be asked about): Claude Code denies before PreToolUse hooks run."""
        if (tool := self._tools.get(name)) is None:
            return None
        try:
            params = parse_arguments(tool, raw_arguments)
        except ToolError:
            return None
        if self.policy is not None and (refused := self.policy.refusal(tool, params, ctx)):
            return refused
        return config_refusal(tool, params, ctx)

    async def admit(
        self, name: str, raw_arguments: str | dict[str, Any], ctx: ToolContext
    ) -> tuple[Tool, BaseModel]:
        """The call's tool and parsed input once permitted; a ToolError (PermissionDenied
        among them) refuses it before it runs."""
        if (tool := self._tools.get(name)) is None:
            raise ToolError(f"Unknown tool {name!r}. Available tools: {', '.join(self.names())}.")
        params = parse_arguments(tool, raw_arguments)
        if self.policy is not None:
            ctx.read_only = ctx.read_only or self.policy.read_only
            await self.policy.check(tool, params, ctx)
        else:
            await check_permission(tool, params, ctx)
        return tool, params

    async def execute(self, tool: Tool, params: BaseModel, ctx: ToolContext) -> ToolResult:
        """Run an admitted call: its output redacted and truncated."""
        result = await _execute(tool, params, ctx)
        if ctx.redact is not None:  # before truncation: the saved full output is redacted too
            output, count = ctx.redact.redact(result.output)
            count += result.metadata.get("redacted", 0)  # found by the tool itself (bash)
            metadata = {**result.metadata, "redacted": count} if count else result.metadata
            result = result.model_copy(update={"output": output, "metadata": metadata})
        if "truncated" not in result.metadata:  # tools that size their own output set it
            direction = "tail" if tool.name in TAIL_TRUNCATED_TOOLS else "head"
            output, meta = await truncate_output_async(
                result.output, ctx.truncation, ctx.output_dir, direction=direction
            )
            result = result.model_copy(
                update={"output": output, "metadata": {**result.metadata, **meta}}
            )
        return result


async def _execute(tool: Tool, params: BaseModel, ctx: ToolContext) -> ToolResult:
    try:
        return await tool.execute(params, ctx)
    except ToolError:
        raise
    except OSError as exc:
        raise ToolError(f"The {tool.name} tool failed: {os_error_message(exc)}") from exc
    except UnicodeError as exc:
        raise ToolError(
            f"The {tool.name} tool failed: text could not be encoded or decoded ({exc})."
        ) from exc
    except Exception as exc:
        log.exception("tool %s crashed", tool.name)
        raise ToolError(
            f"The {tool.name} tool failed unexpectedly: {type(exc).__name__}: {exc}"
        ) from exc
