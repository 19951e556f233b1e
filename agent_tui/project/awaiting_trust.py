"""What a project's command and agent files would do only once it is trusted, as key
paths for the trust question (`commands.NAME.model`, `agents.NAME.tools`): a command's
`model` (where your work is sent) and `allowed-tools`, an agent's `tools`, `model`,
`reasoning` and permissions other than deny. Listing them is what lets the person be
asked, and say yes, for a project whose only Claude Code files are these."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_tui.project.agents import CLAUDE_AGENTS_DIR, PROJECT_AGENTS_DIR
from agent_tui.project.custom_commands import front_matter_files, project_commands

AGENT_KEYS = ("tools", "model", "reasoning")


def held_back(directory: Path) -> list[str]:
    return sorted({*_commands(directory), *_agents(directory)})


def _commands(directory: Path) -> list[str]:
    found = []
    for name, command in project_commands(directory).items():
        keys = (("model", command.model), ("allowed-tools", command.allowed))
        found += [f"commands.{name}.{key}" for key, value in keys if value]
    return found


def _agents(directory: Path) -> list[str]:
    found = []
    for folder, claude in ((CLAUDE_AGENTS_DIR, True), (PROJECT_AGENTS_DIR, False)):
        # a file that cannot be read or parsed is skipped, so not asked about
        for path, header, _ in front_matter_files(directory / folder, "*.md", lower=False):
            name = str(header.get("name") or path.stem) if claude else path.stem
            keys = [key for key in AGENT_KEYS if header.get(key) not in (None, "", "inherit")]
            if claude and "tools" not in header:
                keys.append("tools")  # Claude Code's default: every tool
            if _widens(header.get("permission")):
                keys.append("permission")
            found += [f"agents.{name}.{key}" for key in keys]
    return found


def _widens(permission: Any) -> bool:
    if isinstance(permission, dict):
        return any(_widens(value) for value in permission.values())
    return permission is not None and permission != "deny"
