"""What a person is told about a project's trust: the question (what trusting would
add), the one line `run` prints, `/context`'s lines and `agent-tui trust`'s report."""

from __future__ import annotations

from pathlib import Path

from agent_tui import paths
from agent_tui.config.settings import ProjectTrust
from agent_tui.trust import store
from agent_tui.trust.keys import explain
from agent_tui.trust.vouched import CLAUDE_MCP
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
    if runs:
        lines.append("Programs it would run (in the sandbox, the project writable):")
        lines += [f"  {line}" for line in runs]
    if commands.get("endpoints"):
        lines.append("Where requests would go (with your keys):")
        lines += [f"  {line}" for line in commands["endpoints"]]
    if project.run_files:
        lines.append("Files those commands run: " + ", ".join(project.run_files))
    if project.sent:
        lines.append("What of your environment its MCP servers would receive:")
        lines += [f"  {item.line()}" for item in project.sent]
    return lines


def describe(workspace: Workspace) -> str:
    """The trust question's text: what trusting the project would add, and every key
    that waits, with why."""
    project = workspace.project
    state = STATES.get(project.status, project.status)
    lines = [f"Project: {workspace.directory} ({state})", *what_it_adds(project)]
    unnamed = workspace.unnamed_secrets()
    if unnamed:
        lines.append("Secrets your trust has not named yet (given only once you trust it):")
        lines += [f"  {line}" for line in unnamed]
    lines.append("Everything that waits until you trust it:")
    lines += [f"  {line}" for line in workspace.waiting_lines()]
    lines.append("Without trust the rest of its config applies (limits, compaction, keys).")
    return "\n".join(lines)


def report(project: ProjectTrust) -> str:
    """`agent-tui trust`: the project's state, what it would add and what its trust covers."""
    lines = [f"{project.directory}: {STATES.get(project.status, project.status)}"]
    lines += what_it_adds(project)
    if project.waiting:
        lines.append("Waits until trusted:")
        lines += [f"  {line}" for line in explain(project.waiting)]
    if project.files:
        lines.append("Trust covers: " + ", ".join(sorted(project.files)))
    return "\n".join(lines)


def waiting_note(workspace: Workspace) -> str:
    """One line: what of the project's config was left out, and how to trust it."""
    if not workspace.asks_trust:
        return ""
    keys = sorted({key.split(".", 1)[0] for key in workspace.project.waiting})
    changed = " (changed since you trusted it)" if workspace.project.status == "changed" else ""
    sent = sorted({f"${item.variable} ({item.server})" for item in workspace.project.sent})
    sends = f" Its MCP servers would receive {', '.join(sent)}." if sent else ""
    return (
        f"This project is not trusted{changed}: its {', '.join(keys)} settings are left "
        f"out.{sends} Trust it with `agent-tui trust` (or `agent-tui run --trust`), or in "
        "the app."
    )


CLAUDE_FOLDERS = (("commands", "**/*.md"), ("agents", "*.md"), ("skills", "*/SKILL.md"))


def claude_folder_lines(directory: Path) -> list[str]:
    """For `/context`: Claude Code's commands, agents and skills read, the project's and
    the person's (`~/.claude`), each folder with what it holds."""
    lines = []
    for root in (directory / ".claude", paths.claude_home()):
        for kind, pattern in CLAUDE_FOLDERS:
            try:
                found = sorted(root.joinpath(kind).glob(pattern))
            except OSError:
                continue
            names = [p.parent.name if kind == "skills" else p.stem for p in found]
            if names:
                lines.append(f"Claude Code's {root / kind} read: {', '.join(names)}.")
    return lines


def trust_lines(workspace: Workspace) -> list[str]:
    """For `/context`: the project's trust and what of its config waits."""
    project = workspace.project
    state = STATES.get(project.status, project.status)
    if workspace.trusted and project.status in ("untrusted", "changed"):
        state = "trusted for this session only"
    lines = [f"Project trust: {state}."]
    for path, brought in project.claude_read.items():
        lines.append(f"Claude Code's {path} read: {brought}.")
    lines += claude_folder_lines(workspace.directory)
    if project.claude_mcp:
        names = ", ".join(project.claude_mcp)
        lines.append(f"Claude Code's {CLAUDE_MCP} read: its servers join `mcp` ({names}).")
    waiting = workspace.waiting_lines()
    if waiting:
        lines.append("Waiting for trust (`agent-tui trust`):")
        lines += [f"  {line}" for line in waiting]
    return lines
