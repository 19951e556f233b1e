"""Agents: the built-in primary agents `build` and `plan`, and those a person defines.

In OpenCode's shape, so its users can bring their agents over: `agent.NAME` in
agent-tui.json (config.AgentConfig), or a Markdown file `NAME.md` with the same keys in
its YAML front matter (project/front_matter.py) and the prompt as its body, in
`<config dir>/agents/` (user) and `.agent-tui/agents/` (project); Claude Code's
subagents in `~/.claude/agents/` and `.claude/agents/` are read too
(project/claude_agents.py). Later sources win key by key: built-in, Claude Code's user
files, user files, config, Claude Code's project files, project files. Built-ins can be
changed but not removed. A bad file is a one-line warning naming the file and the field
or line; the agent is skipped, nothing crashes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import ValidationError

from agent_tui import paths, tool_lines
from agent_tui.config.settings import (
    AgentConfig,
    AgentMode,
    AgentPromptFile,
    Config,
    PermissionLevel,
    PermissionRule,
    ReasoningConfig,
)
from agent_tui.errors import UsageError
from agent_tui.project.claude_agents import agent_data
from agent_tui.project.custom_commands import front_matter_files
from agent_tui.project.front_matter import FrontMatterError
from agent_tui.trust.keys import narrow_agent

BUILD = "build"
PLAN = "plan"
DEFAULT_AGENT = BUILD
PROJECT_AGENTS_DIR = Path(".agent-tui") / "agents"
CLAUDE_AGENTS_DIR = Path(".claude") / "agents"
"""Claude Code's (project/claude_agents.py), in a project and in Claude Code's folder."""
USER_AGENTS_DIR = "agents"
"""Under the user config dir."""
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
FILE_REF = re.compile(r"^\{file:(.+)\}$")
PLAN_EXIT_TOOL = tool_lines.PLAN_EXIT_TOOL
"""Only agents whose `tools` name it get it (the plan agent)."""
AGENT_FILE = "Agent file"
"""How a skipped line names an agent's file."""
SUBAGENT_TOOLS = ("read", "grep", "glob", "list", "recall", "webfetch")
"""A subagent's tools unless its config names others."""

READ_ONLY_COMMANDS = (
    "ls", "cat", "head", "tail", "wc", "pwd", "grep", "egrep", "fgrep", "rg", "find", "fd",
    "tree", "file", "stat", "du", "df", "which", "type", "echo", "printf", "nl", "cut",
    "diff", "cmp", "basename", "dirname", "realpath", "readlink", "uname", "date", "whoami",
    "sort", "md5sum", "sha256sum", "git status", "git log", "git diff", "git show",
    "git blame", "git grep", "git ls-files", "git rev-parse", "git branch --list",
    "git branch -a", "git branch -v", "git remote -v", "git describe", "git shortlog",
)  # fmt: skip
"""Commands the plan agent may run (with any arguments but those tool/bash_policy.py
refuses, such as find -exec or sort -o); `git branch` alone lists branches too."""


V = TypeVar("V")


def wildcard_key(table: dict[str, V], name: str) -> str | None:
    """`name` itself when it is a key, else the longest matching wildcard key (fnmatch)."""
    if name in table:
        return name
    keys = [key for key in table if any(c in key for c in "*?[") and fnmatchcase(name, key)]
    return max(keys, key=len) if keys else None


def wildcard_value(table: dict[str, V], name: str) -> V | None:
    """The value of `name`'s key (wildcard_key), else None."""
    key = wildcard_key(table, name)
    return None if key is None else table[key]


def read_only_bash() -> dict[str, PermissionLevel]:
    allowed = [form for command in READ_ONLY_COMMANDS for form in (command, f"{command} *")]
    return {"*": "deny", "git branch": "allow", **dict.fromkeys(allowed, "allow")}


PLAN_REFUSAL = (
    "Plan mode is on: {what} is refused. In plan mode you read and search (read, grep, "
    "glob, list, and read-only bash such as ls, cat, rg, git status/log/diff/show); "
    "nothing is changed. Finish investigating, then call plan_exit with your plan: the "
    "person approves it, which switches to the build agent, or leaves plan mode {switch}."
)
MODE_SWITCH = "by choosing another agent"
"""How a person leaves plan mode, where the front-end does not name its own way
(`Engine.name_mode_switch`: the app's key, an editor's mode selector)."""


@dataclass
class AgentInfo:
    """An agent as its requests use it (built-in, then config and files merged in)."""

    name: str
    description: str = ""
    mode: AgentMode = "all"
    model: str | None = None
    reasoning: ReasoningConfig | None = None
    prompt: str | None = None
    """Replaces the base prompt of the model family (a subagent's follows task.txt)."""
    instructions: str | None = None
    """A built-in's own text after the base prompt (the plan agent's rules)."""
    tools: dict[str, bool] = field(default_factory=dict)
    permission: dict[str, PermissionRule] = field(default_factory=dict)
    max_steps: int | None = None
    temperature: float | None = None
    hidden: bool = False
    isolation: Literal["worktree"] | None = None
    """worktree: as a subagent it runs in a new git worktree of its own."""
    refusal: str | None = None
    """The sentence a refused call gets ({what} is the call, {switch} how the person
    switches agents where they are); default names the agent."""
    source: str = "built-in"

    @property
    def primary(self) -> bool:
        return self.mode in ("primary", "all")

    @property
    def subagent(self) -> bool:
        return self.mode in ("subagent", "all")

    @property
    def read_only(self) -> bool:
        """It may not change files (edit and write denied, as plan): its commands run in a
        read-only sandbox, the project included."""
        return self.permission.get("edit") == "deny" and self.permission.get("write") == "deny"

    def tool_enabled(self, name: str, default: bool) -> bool:
        """Its own key, else the longest matching wildcard key, else `default`."""
        enabled = wildcard_value(self.tools, name)
        return default if enabled is None else enabled

    def refusal_for(self, what: str, switch: str = MODE_SWITCH) -> str:
        if self.refusal:
            return self.refusal.format(what=what, switch=switch)
        return (
            f"The {self.name} agent may not do this: {what} is refused by its permissions "
            f"(agent.{self.name}.permission). Switch agents to do it."
        )


def builtin_agents() -> dict[str, AgentInfo]:
    return {
        BUILD: AgentInfo(
            name=BUILD,
            description="The default agent: reads, changes files and runs commands.",
            mode="primary",
        ),
        PLAN: AgentInfo(
            name=PLAN,
            description="Plan mode: investigates and proposes a plan; changes nothing.",
            mode="primary",
            instructions=paths.read_prompt("plan.txt").strip(),
            tools={PLAN_EXIT_TOOL: True},
            permission={"edit": "deny", "write": "deny", "bash": read_only_bash()},
            refusal=PLAN_REFUSAL,
        ),
    }


# ---- loading ----------------------------------------------------------------------------


@dataclass
class AgentCatalog:
    agents: dict[str, AgentInfo]
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> AgentInfo | None:
        return self.agents.get(name)

    def primary(self) -> list[AgentInfo]:
        """The Tab cycle: build, plan, then the others by name."""
        found = [a for a in self.agents.values() if a.primary and not a.hidden]
        order = {BUILD: 0, PLAN: 1}
        return sorted(found, key=lambda a: (order.get(a.name, 2), a.name))

    def chosen(self, name: str | None) -> AgentInfo:
        """A primary agent by name (default: build); UsageError naming the valid ones."""
        found = self.get(name or DEFAULT_AGENT)
        if found is None or not found.primary:
            valid = ", ".join(a.name for a in self.agents.values() if a.primary)
            kind = "a subagent (the task tool runs it)" if found else "not defined"
            raise UsageError(f"Agent {name!r} is {kind}. Primary agents: {valid}.")
        return found

    def subagents(self) -> list[AgentInfo]:
        return sorted((a for a in self.agents.values() if a.subagent), key=lambda a: a.name)

    def warning(self) -> str | None:
        return "\n".join(self.warnings) or None


def _describe(error: dict[str, Any]) -> str:
    where = ".".join(str(p) for p in error["loc"] if not isinstance(p, int)) or "(front matter)"
    if error["type"] == "extra_forbidden":
        return f"field {where}: unknown key (valid: {', '.join(sorted(AgentConfig.model_fields))})"
    return f"field {where}: {error['msg']}"


def _read_prompt(ref: str | AgentPromptFile, bases: list[Path], where: str) -> str:
    """A prompt's text: itself, or the file `{file:path}` / {"file": path} names."""
    if isinstance(ref, AgentPromptFile):
        name = ref.file
    elif match := FILE_REF.match(ref.strip()):
        name = match.group(1).strip()
    else:
        return ref
    path = Path(name).expanduser()
    candidates = [path] if path.is_absolute() else [base / path for base in bases]
    for candidate in candidates:
        try:
            return candidate.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
    raise FrontMatterError(f"{where}: field prompt: file {name} not found")


def _file_ref(value: Any) -> Any:
    """`prompt: {file:x.md}` unquoted is the YAML mapping {"file:x.md": None}: the
    reference it was written as."""
    if isinstance(value, dict) and len(value) == 1:
        ((key, inner),) = value.items()
        if inner is None and isinstance(key, str) and key.startswith("file:"):
            return "{" + key + "}"
    return value


def _tools(value: list[str] | dict[str, bool]) -> dict[str, bool]:
    if isinstance(value, list):  # the only tools it may call
        return {"*": False, **dict.fromkeys(value, True)}
    return dict(value)


def _apply(
    agents: dict[str, AgentInfo],
    name: str,
    entry: AgentConfig,
    bases: list[Path],
    source: str,
) -> None:
    """Merge `entry` into the agent `name` (a new one when unknown), key by key."""
    prompt = _read_prompt(entry.prompt, bases, source) if entry.prompt is not None else None
    info = agents.get(name) or AgentInfo(name=name, source=source)
    for key in ("mode", "model", "reasoning", "max_steps", "temperature", "isolation"):
        if getattr(entry, key) is not None:
            setattr(info, key, getattr(entry, key))
    for key in {"description", "hidden"} & entry.model_fields_set:
        setattr(info, key, getattr(entry, key))
    if prompt is not None:
        info.prompt = prompt
    if entry.tools is not None:
        info.tools = {**info.tools, **_tools(entry.tools)}
    if entry.permission:
        info.permission = {**info.permission, **entry.permission}
    info.source = source
    agents[name] = info


@dataclass
class _Claude:
    """Claude Code's agent files (project/claude_agents.py): the main model their aliases
    follow, and notes about what could not be kept."""

    main_model: str
    notes: list[str] = field(default_factory=list)


def _load_file(
    path: Path,
    data: dict[str, Any],
    body: str,
    untrusted: Path | None = None,
    claude: _Claude | None = None,
) -> tuple[str, AgentConfig]:
    """Its name and keys from its front matter `data`, the body as its prompt;
    FrontMatterError with the field that is wrong. `untrusted`: the directory of a project
    not yet trusted, whose agents only narrow (trust/keys.py `narrow_agent`)."""
    if "prompt" in data:
        data["prompt"] = _file_ref(data["prompt"])
    body = body.strip()
    if body:
        data["prompt"] = body
    name = path.stem
    if claude is not None:
        name = str(data.get("name") or name)
        data, note = agent_data(data, claude.main_model)
        claude.notes += [f"Agent file {path}: {note}."] if note else []
    if untrusted is not None:
        data, _ = narrow_agent(data, untrusted)
    try:
        return name, AgentConfig.model_validate(data)
    except ValidationError as exc:
        raise FrontMatterError(_describe(exc.errors()[0])) from exc


def _load_dir(
    folder: Path,
    agents: dict[str, AgentInfo],
    warnings: list[str],
    base: Path,
    untrusted: Path | None = None,
    claude: _Claude | None = None,
) -> None:
    """Its agents; a file that cannot be read (one linking outside an `untrusted` project
    included) or parsed, or whose agent is wrong, is a line in `warnings`."""
    files = front_matter_files(folder, "*.md", untrusted, warnings, AGENT_FILE, lower=False)
    for path, data, body in files:
        try:
            name, entry = _load_file(path, data, body, untrusted, claude)
            if not NAME_RE.match(name):
                raise FrontMatterError(f"the name {name!r} is not valid")
            _apply(agents, name, entry, [path.parent, base], str(path))
        except (FrontMatterError, OSError) as exc:
            warnings.append(f"{AGENT_FILE} {path}: {exc}; skipped.")


def load_agents(config: Config, directory: Path, *, trusted: bool = True) -> AgentCatalog:
    """Built-ins, then user files, config `agent`, project files (later wins key by key).
    An untrusted project's agent files only narrow: tools, model and permissions other
    than deny wait for trust (the config's `agent` key is narrowed when loaded)."""
    agents = builtin_agents()
    warnings: list[str] = []
    claude = _Claude(config.model)
    _load_dir(paths.claude_home() / "agents", agents, warnings, directory, None, claude)
    _load_dir(paths.config_dir() / USER_AGENTS_DIR, agents, warnings, directory)
    for name, entry in config.agent.items():
        try:
            _apply(agents, name, entry, [directory, paths.config_dir()], f"config agent.{name}")
        except FrontMatterError as exc:
            warnings.append(f"Config {exc}; agent {name} skipped.")
    untrusted = None if trusted else directory
    _load_dir(directory / CLAUDE_AGENTS_DIR, agents, warnings, directory, untrusted, claude)
    _load_dir(directory / PROJECT_AGENTS_DIR, agents, warnings, directory, untrusted)
    return AgentCatalog(agents, warnings + claude.notes)
