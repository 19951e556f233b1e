"""plan_exit: the plan agent hands its finished plan to the person and ends its turn.

The plan is the tool part's input (stored like every part; compaction carries it, see
step/plan.py). The call itself blocks on nobody: the session loop stops after the
step that made it, the app then shows the plan for approval, and headless `run` prints
it. The person's answer arrives as the next message (approve: the build agent with the
plan as its instruction; reject: a note for the plan agent).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from agent_tui.errors import ToolError
from agent_tui.project.agents import PLAN_EXIT_TOOL
from agent_tui.tool.base import Tool, ToolContext, ToolResult

PLAN_SHOWN = (
    "The plan was shown to the person. Stop here and do not call more tools: their "
    "answer (approve, keep planning, or reject with a note) comes as the next message."
)


class PlanExitParams(BaseModel):
    plan: str = Field(
        description=(
            "The complete plan in Markdown: the goal, the files to change and how, new "
            "files, how to verify, risks and open questions."
        )
    )


class PlanExitTool(Tool[PlanExitParams]):
    name = PLAN_EXIT_TOOL
    description = (
        "Present your finished plan to the person and leave plan mode once they approve "
        "it. Call it when your investigation is complete and the plan is concrete enough "
        "to carry out step by step. The person approves it (the build agent then carries "
        "it out), asks you to keep planning, or rejects it with a note. End your turn "
        "after calling it."
    )
    Params = PlanExitParams

    def describe(self, params: PlanExitParams, ctx: ToolContext) -> tuple[str, str]:
        return "plan", params.plan

    async def execute(self, params: PlanExitParams, ctx: ToolContext) -> ToolResult:
        if not params.plan.strip():
            raise ToolError("The plan is empty: pass the whole plan as Markdown in `plan`.")
        return ToolResult(title="Plan proposed", output=PLAN_SHOWN)
