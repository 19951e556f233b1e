"""What a person is told about a project's trust: the question (what trusting would
add), the one line `run` prints, `/context`'s lines and `agent-tui trust`'s report."""

from __future__ import annotations

from pathlib import Path

from agent_tui import paths
from agent_tui.config.settings import ProjectTrust
from agent_tui.project.custom_commands import load_custom_commands
from agent_tui.project.skills import load_skills
from agent_tui.trust import store
from agent_tui.trust.keys import explain
from agent_tui.trust.trusted_files import CLAUDE_MCP
from agent_tui.workspace.workspace import Workspace

STATES = {
    "trusted": "trusted",
    "by-config": "trusted (trusted_projects in your own config)",
    "untrusted": "not trusted",
    "changed": "not trusted any more: its files changed since you trusted it",
    "nothing": "nothing to trust (no agent-tui.json or .agent-tui/)",
}
COMMAND_KEYS = ("hooks", "lsp", "mcp", "format")


def what_it_adds(project: ProjectTrust) -> list[str]:
    """What would run and where requests would go, once trusted."""
    lines: list[str] = []
    if project.status == "changed":
        lines.append(f"Changed since you trusted it: {store.describe_change(project.changed)}")
    commands = project.commands
    runs = [f"{key}: {', '.join(commands[key])}" for key in COMMAND_KEYS if key in commands]
    lines += _section("Programs it would run (in the sandbox, the project writable):", runs)
    lines += _section("Where requests would go (with your keys):", commands.get("endpoints"))
    if project.run_files:
        lines.append("Files those commands run: " + ", ".join(project.run_files))
    sent = [item.line() for item in project.sent]
    lines += _section("What of your environment its MCP servers would receive:", sent)
    return lines + import_lines(project)


def _section(heading: str, items: list[str] | None) -> list[str]:
    """`heading` and each item indented under it; nothing when there is no item."""
    return [heading, *(f"  {item}" for item in items)] if items else []


def import_lines(project: ProjectTrust) -> list[str]:
    """The files outside the project its memory files import (trust/memory_imports.py):
    those trust lets the model read, and a secret's, never read."""
    directory = Path(project.directory)
    readable = [item.line(directory) for item in project.imports if not item.secret]
    secret = [item.line(directory) for item in project.imports if item.secret]
    read = "Files outside it that its memory files import (read into the context):"
    never = "A secret's path its memory files import (never read, trusted or not):"
    return _section(read, readable) + _section(never, secret)


def describe(workspace: Workspace) -> str:
    """The trust question's text: what trusting the project would add, and every key
    that waits, with why."""
    project = workspace.project
    state = STATES.get(project.status, project.status)
    lines = [f"Project: {workspace.directory} ({state})", *what_it_adds(project)]
    lines += _section("What it brings in Claude Code's files:", claude_lines(workspace, own=False))
    lines += _section(
        "Secrets your trust has not named yet (given only once you trust it):",
        workspace.unnamed_secrets(),
    )
    lines += _section("Everything that waits until you trust it:", workspace.waiting_lines())
    lines.append("Without trust the rest of its config applies (limits, compaction, keys).")
    return "\n".join(lines)


def report(project: ProjectTrust) -> str:
    """`agent-tui trust`: the project's state, what it would add and what its trust covers."""
    lines = [f"{project.directory}: {STATES.get(project.status, project.status)}"]
    lines += what_it_adds(project)
    lines += _section("Waits until trusted:", explain(project.waiting))
    if project.files:
        lines.append("Trust covers: " + ", ".join(sorted(project.files)))
    return "\n".join(lines)


def waiting_note(workspace: Workspace) -> str:
    """One line: what of the project's config was left out, and how to trust it."""
    if not workspace.asks_trust:
        return ""
    keys = sorted({key.split(".", 1)[0] for key in workspace.project.waiting})
    left_out = [f"its {', '.join(keys)} settings are left out"] if keys else []
    if imports := workspace.imports_waiting():
        named = ", ".join(item.named(workspace.directory) for item in imports)
        left_out.append(f"its memory files' imports from outside it are not read ({named})")
    changed = " (changed since you trusted it)" if workspace.project.status == "changed" else ""
    sent = sorted({f"${item.variable} ({item.server})" for item in workspace.project.sent})
    sends = f" Its MCP servers would receive {', '.join(sent)}." if sent else ""
    return (
        f"This project is not trusted{changed}: {'; '.join(left_out)}.{sends} Trust it with "
        "`agent-tui trust` (or `agent-tui run --trust`), or in the app."
    )


CLAUDE_FOLDERS = ("commands", "agents", "skills")


def claude_lines(workspace: Workspace, own: bool = True) -> list[str]:
    """What Claude Code's files brought: the project's settings, its `.claude/` commands,
    agents and skills (and the person's in `~/.claude` when `own`), its `.mcp.json`. The
    trust question and `/context` both say it in these words."""
    project = workspace.project
    read = project.claude_read.items()
    lines = [f"Claude Code's {path} read: {brought}." for path, brought in read]
    lines += claude_folder_lines(workspace, own)
    if project.claude_mcp:
        names = ", ".join(project.claude_mcp)
        lines.append(f"Claude Code's {CLAUDE_MCP} read: its servers join `mcp` ({names}).")
    return lines


def claude_folder_lines(workspace: Workspace, own: bool = True) -> list[str]:
    """Each of Claude Code's folders with the commands, agents and skills it brought, by
    the names they are called by: a file skipped (workspace/skipped.py) or one agent-tui's
    own of the same name replaces is not among them."""
    found = _in_effect(workspace)
    roots = [workspace.directory / ".claude"] + ([paths.claude_home()] if own else [])
    lines = []
    for root in roots:
        for kind in CLAUDE_FOLDERS:
            folder = root / kind
            names = sorted({name for path, name in found[kind] if path.is_relative_to(folder)})
            if names:
                lines.append(f"Claude Code's {folder} read: {', '.join(names)}.")
    return lines


def _in_effect(workspace: Workspace) -> dict[str, list[tuple[Path, str]]]:
    """(file, name) of each command, agent and skill in effect."""
    directory = workspace.directory
    commands = load_custom_commands(directory).commands.values()
    agents = workspace.agent_catalog().agents.values()
    return {
        "commands": [(command.path, command.name) for command in commands],
        "agents": [(Path(agent.source), agent.name) for agent in agents],
        "skills": [(skill.path, skill.name) for skill in load_skills(directory).values()],
    }


def trust_lines(workspace: Workspace) -> list[str]:
    """For `/context`: the project's trust and what of its config waits."""
    project = workspace.project
    state = STATES.get(project.status, project.status)
    if workspace.trusted and project.status in ("untrusted", "changed"):
        state = "trusted for this session only"
    elif workspace.trust_refused:
        state += ", refused for good (asked again once its files change)"
    lines = [f"Project trust: {state}.", *claude_lines(workspace)]
    return lines + _section("Waiting for trust (`agent-tui trust`):", workspace.waiting_lines())
