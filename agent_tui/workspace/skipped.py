"""The files of a project skipped as broken (issue 50), one line each naming the file and
the error: its config files (`agent-tui.json`, Claude Code's settings and `.mcp.json`:
config/layers.project_layer), its commands, skills and agents (project/), and the
person's own Markdown files beside them. A project's broken file never stops agent-tui:
the workspace shows the lines once as warnings (the app's notices, `run`'s stderr) and
`/context` lists them. The person's own config files still stop with their error."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_tui.config.settings import ProjectTrust
from agent_tui.project.custom_commands import load_custom_commands
from agent_tui.project.skills import load_skills

if TYPE_CHECKING:
    from agent_tui.workspace.workspace import Workspace

HEADING = "Files skipped or read in part at start:"


def skipped_files(directory: Path, project: ProjectTrust) -> list[str]:
    """The config files, commands and skills skipped (the agents' lines are their
    catalog's, project/agents.py)."""
    skills: list[str] = []
    load_skills(directory, skills)
    return [*project.skipped, *load_custom_commands(directory).skipped, *skills]


def context_lines(workspace: Workspace) -> list[str]:
    """For `/context`: every line the start showed about files, under a heading; none
    when every file was read."""
    found = skipped_files(workspace.directory, workspace.project)
    found += workspace.agent_catalog().warnings
    return [HEADING, *(f"  {line}" for line in found)] if found else []
