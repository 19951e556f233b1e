"""The skill tool: the body of one of the skills the system prompt lists (project/skills.py).

Its outputs are never pruned (config `compaction.protected_tools`): a skill followed
early in a long session stays in force.
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.project.skills import load_skills
from agent_tui.tool.base import Tool, ToolContext, ToolResult


class SkillParams(BaseModel):
    name: str = Field(description="The skill's name, as listed in the system prompt.")


class SkillTool(Tool[SkillParams]):
    name = "skill"
    description = (
        "Load a skill: the instructions for a kind of task listed under Skills in the "
        "system prompt. Returns the skill's text and its folder; read files it mentions "
        "relative to that folder."
    )
    Params = SkillParams
    default_permission = "allow"

    def describe(self, params: SkillParams, ctx: ToolContext) -> tuple[str, str]:
        return params.name, ""

    async def execute(self, params: SkillParams, ctx: ToolContext) -> ToolResult:
        skills = await asyncio.to_thread(load_skills, ctx.directory)
        if (skill := skills.get(params.name.strip().lower())) is None:
            available = ", ".join(skills[key].name for key in sorted(skills)) or "none"
            raise ToolError(f"No skill named {params.name!r}. Available skills: {available}.")
        output = (
            f'<skill name="{skill.name}">\n'
            f"Skill folder: {skill.folder} (paths in this skill are relative to it)\n\n"
            f"{skill.body}\n</skill>"
        )
        return ToolResult(
            title=skill.name,
            output=output,
            metadata={"path": str(skill.path), "folder": str(skill.folder)},
        )
