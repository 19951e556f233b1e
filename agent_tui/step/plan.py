"""The plan agent's plan: found in the history, carried through compaction, approved.

`plan_exit` stores the plan as its tool part's input. A compaction puts the newest plan
into the summary request and on the summary (`AssistantMessage.plan`), which
messages.py restates right after the summary, like the todo list. The person's answer
is an ordinary next message (`plan_reply`): approval goes to the build agent with the
plan in it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel

from agent_tui.project.agents import BUILD, PLAN, PLAN_EXIT_TOOL
from agent_tui.records import (
    AssistantMessage,
    MessageWithParts,
    Part,
    ToolPart,
    ToolStateCompleted,
)

PLAN_HEADER = "The newest plan proposed with plan_exit:"
"""Heads the plan in the summary request."""
PLAN_RESTATED = "The newest plan proposed with plan_exit when the summary above was written:"
APPROVED = (
    "I approve this plan. Switch from planning to building: carry it out now, step by "
    "step, and verify it as it says."
)
REJECTED = "I reject this plan. Keep planning: revise it and present it again with plan_exit."


def proposed_plan(parts: Iterable[Part]) -> str | None:
    """The plan of the newest completed plan_exit call among `parts`."""
    found = None
    for part in parts:
        if (
            isinstance(part, ToolPart)
            and part.tool == PLAN_EXIT_TOOL
            and isinstance(part.state, ToolStateCompleted)
        ):
            plan = part.state.input.get("plan")
            if isinstance(plan, str) and plan.strip():
                found = plan.strip()
    return found


def latest_plan(history: list[MessageWithParts]) -> str:
    """The newest plan in the history: a plan_exit call, else what the newest summary
    restated ("" when there is none)."""
    for message in reversed(history):
        if plan := proposed_plan(message.parts):
            return plan
        info = message.info
        if isinstance(info, AssistantMessage) and info.summary and info.plan:
            return info.plan
    return ""


def plan_block(plan: str, header: str = PLAN_HEADER) -> str:
    return f"{header}\n<plan>\n{plan}\n</plan>" if plan else ""


PlanChoice = Literal["approve", "keep", "reject"]


class PlanReply(BaseModel):
    agent: str
    """The agent the session goes on with."""
    text: str | None
    """What is sent to it (None: nothing, the person keeps planning)."""


def plan_reply(plan: str, choice: PlanChoice, note: str = "") -> PlanReply:
    """The person's answer to a plan as the next message: approve -> the build agent
    carries it out; reject -> the plan agent revises it with the note; keep -> nothing
    is sent and the plan agent waits for the person's next words."""
    if choice == "approve":
        return PlanReply(agent=BUILD, text=approval_text(plan))
    if choice == "reject":  # the person's no, with their note
        note = note.strip()
        return PlanReply(agent=PLAN, text=f"{REJECTED}\n\nMy note: {note}" if note else REJECTED)
    return PlanReply(agent=PLAN, text=None)


def approval_text(plan: str) -> str:
    """The next instruction once the person approves: for the build agent."""
    return f"{APPROVED}\n\n<plan>\n{plan.strip()}\n</plan>"
